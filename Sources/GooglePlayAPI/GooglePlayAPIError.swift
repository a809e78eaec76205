/// Why a Play Developer API call failed. One error type for the module; callers decide what to retry by `kind`.
public struct GooglePlayAPIError: Error, Sendable, CustomStringConvertible {
    public enum Kind: String, Sendable {
        /// 404: Google does not know the token (or it is older than 60 days past expiry).
        case notFound = "not_found"
        /// 401/403 or a refused token grant: the service account has no access (Play Console → Users and permissions).
        case unauthorized
        /// Another 4xx: the request itself is wrong.
        case refused
        /// 429, 5xx, a timeout or a transport failure: worth a retry later.
        case unavailable
        /// A success whose body is not the documented JSON.
        case invalidResponse = "invalid_response"
    }

    public let kind: Kind
    public let message: String
    public let httpStatus: Int?

    public init(_ kind: Kind, _ message: String, httpStatus: Int? = nil) {
        self.kind = kind
        self.message = message
        self.httpStatus = httpStatus
    }

    public var isRetryable: Bool { kind == .unavailable }
    public var description: String { "\(kind.rawValue): \(message)" }
}
