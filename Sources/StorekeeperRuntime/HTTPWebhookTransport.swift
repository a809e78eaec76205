import Application
import AsyncHTTPClient
import Foundation
import NIOCore
import Synchronization

/// Webhook requests over AsyncHTTPClient: the answer's status counts, its body is read (at most 64 KiB) and dropped.
/// Redirects are never followed (the shared client follows up to 20): a 3xx is answered to the delivery job, which
/// records it as a failed attempt.
struct HTTPWebhookTransport: WebhookTransport {
    /// HTTP/1.1 connections to one host and port at least: the most jobs `work` runs at once by default
    /// (``StorekeeperConfiguration/defaultWorkerConcurrency(cores:)``); more where it runs more (``init(jobs:)``). A
    /// delivery job sends one request at a time, so each has a connection of its own and none waits in the client's
    /// pool, a wait its 10 s timeout counts: with AsyncHTTPClient's default of 8 a host, 32 jobs behind an endpoint
    /// answering in 2.5 s would have failed attempts that never reached it, and deliveries to one answering in 200 ms
    /// stayed at 39 a second with 16 or 32 jobs at once (`storekeeper-bench events --endpoint-delay-ms 200`,
    /// docs/capacity.md). An https endpoint that agrees on HTTP/2 takes them all on one connection.
    static let minimumConnectionsPerEndpoint = 64

    /// One client for the process's life per connection limit, like `HTTPClient.shared` (never shut down), but
    /// without redirects.
    private static let clients = Mutex<[Int: HTTPClient]>([:])

    static func client(connectionsPerEndpoint: Int) -> HTTPClient {
        clients.withLock { clients in
            if let client = clients[connectionsPerEndpoint] { return client }
            var configuration = HTTPClient.Configuration(redirectConfiguration: .disallow)
            configuration.connectionPool = .init(idleTimeout: .seconds(60), concurrentHTTP1ConnectionsPerHostSoftLimit: connectionsPerEndpoint)
            let client = HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
            clients[connectionsPerEndpoint] = client
            return client
        }
    }

    let client: HTTPClient

    /// A transport whose client keeps a connection to an endpoint for each of `jobs` deliveries at once (at least
    /// ``minimumConnectionsPerEndpoint``).
    init(jobs: Int = 0) { self.client = Self.client(connectionsPerEndpoint: max(Self.minimumConnectionsPerEndpoint, jobs)) }

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
