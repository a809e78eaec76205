import Foundation

/// Sends one webhook request (the HTTP client lives in the runtime; tests and benchmarks use the same one).
public protocol WebhookTransport: Sendable {
    /// POSTs `body` to `url` with `headers`; returns the response status, or throws on a connection error or after
    /// `timeout`.
    func post(_ url: URL, headers: [(String, String)], body: Data, timeout: Duration) async throws -> Int
}
