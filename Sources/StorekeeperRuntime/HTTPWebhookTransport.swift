import Application
import AsyncHTTPClient
import Foundation
import NIOCore

/// Webhook requests over AsyncHTTPClient: the answer's status counts, its body is read (at most 64 KiB) and dropped.
/// Redirects are never followed (the shared client follows up to 20): a 3xx is answered to the delivery job, which
/// records it as a failed attempt.
struct HTTPWebhookTransport: WebhookTransport {
    /// One client for the process's life, like `HTTPClient.shared`, but without redirects.
    static let client = HTTPClient(
        eventLoopGroupProvider: .singleton, configuration: HTTPClient.Configuration(redirectConfiguration: .disallow))

    let client: HTTPClient

    init(client: HTTPClient = Self.client) { self.client = client }

    func post(_ url: URL, headers: [(String, String)], body: Data, timeout: Duration) async throws -> WebhookResponse {
        var request = HTTPClientRequest(url: url.absoluteString)
        request.method = .POST
        for (name, value) in headers { request.headers.add(name: name, value: value) }
        request.body = .bytes(ByteBuffer(data: body))
        let response = try await client.execute(request, timeout: .nanoseconds(Int64(timeout.components.seconds) * 1_000_000_000))
        _ = try? await response.body.collect(upTo: 64 << 10)
        return WebhookResponse(status: Int(response.status.code), location: response.headers.first(name: "location"))
    }
}
