/// Errors of the job queue module.
public struct JobQueueError: Error, Sendable, Equatable, CustomStringConvertible {
    public enum Code: String, Sendable {
        /// The job is no longer running under this attempt: it was rescued or finished elsewhere. The caller's
        /// transaction must roll back so its effects are not applied twice.
        case lostClaim
        /// Job arguments could not be encoded or decoded, or no handler knows the kind.
        case invalidArguments
        /// An attempt ran longer than its handler's timeout.
        case timedOut
        /// A stored job holds what the queue never writes (an unknown state).
        case corruptJob
        /// A step of the claim loop was given up because the worker is stopping.
        case stopping
    }

    public let code: Code
    public let message: String

    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { "\(code.rawValue): \(message)" }
}
