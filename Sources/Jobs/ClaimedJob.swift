import Foundation

/// A job claimed by a worker. `attempt` is the fencing token: every later state write names it, so a worker whose
/// claim was rescued cannot overwrite the outcome of the new attempt.
public struct ClaimedJob: Sendable, Equatable {
    public var id: Int64
    public var kind: String
    public var attempt: Int
    public var maxAttempts: Int
    /// JSON text of the arguments.
    public var arguments: String

    public init(id: Int64, kind: String, attempt: Int, maxAttempts: Int, arguments: String) {
        self.id = id
        self.kind = kind
        self.attempt = attempt
        self.maxAttempts = maxAttempts
        self.arguments = arguments
    }

    /// Decodes the arguments as `type`.
    public func decodeArguments<Arguments: Decodable>(as type: Arguments.Type) throws(JobQueueError) -> Arguments {
        guard let decoded = try? JSONDecoder().decode(type, from: Data(arguments.utf8)) else {
            throw JobQueueError(.invalidArguments, "arguments of job \(id) are not a valid \(type)")
        }
        return decoded
    }
}
