import Application
import AsyncHTTPClient
import Foundation
import NIOCore

/// Webhook requests over AsyncHTTPClient: the answer's status counts, its body is read (at most 64 KiB) and dropped.
struct HTTPWebhookTransport: WebhookTransport {
    let client: HTTPClient

    init(client: HTTPClient = .shared) { self.client = client }

    func post(_ url: URL, headers: [(String, String)], body: Data, timeout: Duration) async throws -> Int {
        var request = HTTPClientRequest(url: url.absoluteString)
        request.method = .POST
        for (name, value) in headers { request.headers.add(name: name, value: value) }
        request.body = .bytes(ByteBuffer(data: body))
        let response = try await client.execute(request, timeout: .nanoseconds(Int64(timeout.components.seconds) * 1_000_000_000))
        _ = try? await response.body.collect(upTo: 64 << 10)
        return Int(response.status.code)
    }
}
