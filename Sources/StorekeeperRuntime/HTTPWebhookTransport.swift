import Application
import AsyncHTTPClient
import Foundation
import NIOCore

/// Webhook requests over AsyncHTTPClient: the answer's status counts, its body is read (at most 64 KiB) and dropped.
/// Redirects are never followed (the shared client follows up to 20): a 3xx is answered to the delivery job, which
/// records it as a failed attempt.
struct HTTPWebhookTransport: WebhookTransport {
    /// One client for the process's life, like `HTTPClient.shared`, but without redirects, and with as many
    /// connections to an endpoint as `work` runs delivery jobs by default (``connectionsPerEndpoint``).
    static let client: HTTPClient = {
        var configuration = HTTPClient.Configuration(redirectConfiguration: .disallow)
        configuration.connectionPool = .init(idleTimeout: .seconds(60), concurrentHTTP1ConnectionsPerHostSoftLimit: connectionsPerEndpoint)
        return HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
    }()

    /// HTTP/1.1 connections to one endpoint at most: the most jobs `work` runs at once by default
    /// (``StorekeeperConfiguration/defaultWorkerConcurrency(cores:)``). A delivery job sends one request at a time, so
    /// each has a connection of its own and none waits in the pool, a wait its 10 s timeout would count. With
    /// AsyncHTTPClient's default of 8 a host, deliveries to an endpoint answering in 200 ms stayed at 39 a second with
    /// 16 or 32 jobs at once, and held the slots applies wanted (`storekeeper-bench events --endpoint-delay-ms 200`,
    /// docs/capacity.md). An HTTP/2 endpoint takes them all on one connection.
    static let connectionsPerEndpoint = 64

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
