import Foundation

/// Sends one webhook request (the HTTP client lives in the runtime; tests and benchmarks use the same one).
public protocol WebhookTransport: Sendable {
    /// POSTs `body` to `url` with `headers`, following no redirect; returns the response's status and `Location`,
    /// or throws on a connection error or after `timeout`.
    func post(_ url: URL, headers: [(String, String)], body: Data, timeout: Duration) async throws -> WebhookResponse
}

/// What a webhook endpoint answered.
public struct WebhookResponse: Sendable, Equatable {
    public var status: Int
    /// The `Location` of a redirect, which is never followed: a signed event goes only where it was configured to.
    public var location: String?

    public init(status: Int, location: String? = nil) {
        self.status = status
        self.location = location
    }
}
