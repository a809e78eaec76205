/// Why a Stripe API call failed: the one error type of the module.
public struct StripeAPIError: Error, Sendable, CustomStringConvertible {
    public enum Kind: String, Sendable {
        /// The object does not exist (404): nothing to read again.
        case notFound
        /// Stripe refused the request (4xx other than 404 and 429): retrying the same request cannot help.
        case refused
        /// Rate limited (429), a server error (5xx) or no answer: retried, and worth retrying later.
        case unavailable
        /// The answer is not the documented JSON.
        case invalidResponse
    }

    public var kind: Kind
    public var message: String
    public var httpStatus: Int?
    /// Stripe's `error.code`, when it sent one.
    public var code: String?

    public init(_ kind: Kind, _ message: String, httpStatus: Int? = nil, code: String? = nil) {
        self.kind = kind
        self.message = message
        self.httpStatus = httpStatus
        self.code = code
    }

    public var description: String { "stripe \(kind.rawValue): \(message)" }
    var isRetryable: Bool { kind == .unavailable }
}
