/// Errors of the App Store Server API client, with whether a retry can help.
public struct AppStoreServerError: Error, Sendable, Equatable, CustomStringConvertible {
    public enum Kind: String, Sendable {
        /// Credentials or base URL are missing or unusable.
        case configuration
        /// Apple answered with an error (see ``apiCode`` and ``httpStatus``).
        case api
        /// The request did not get an answer (network, timeout).
        case transport
        /// The answer was not what the API documents, or a signed item in it failed verification.
        case invalidResponse
    }

    public let kind: Kind
    public let message: String
    /// Apple's `errorCode` (e.g. 4040010), when it sent one.
    public let apiCode: Int64?
    public let httpStatus: Int?

    public init(_ kind: Kind, _ message: String, apiCode: Int64? = nil, httpStatus: Int? = nil) {
        self.kind = kind
        self.message = message
        self.apiCode = apiCode
        self.httpStatus = httpStatus
    }

    /// Whether the same request may succeed later: rate limits (429 / 4290000), Apple's retryable codes, server
    /// errors and transport failures.
    public var isRetryable: Bool {
        switch kind {
        case .transport: return true
        case .configuration, .invalidResponse: return false
        case .api:
            if let apiCode { return Self.retryableCodes.contains(apiCode) }
            return httpStatus == 429 || (httpStatus ?? 0) >= 500
        }
    }

    static let retryableCodes: Set<Int64> = [4_290_000, 5_000_000, 5_000_001, 4_040_002, 4_040_004, 4_040_006]

    public var description: String {
        var text = message
        if let apiCode { text += " (Apple error \(apiCode))" } else if let httpStatus { text += " (HTTP \(httpStatus))" }
        return text
    }
}
