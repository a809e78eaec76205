import Foundation
import Hummingbird
import HummingbirdTesting
import Synchronization
import Testing

@testable import StorekeeperRuntime

/// The webhook client against a live HTTP/1.1 endpoint: `work`'s delivery jobs each send one request at a time, so
/// their requests to one endpoint must all be able to be in flight at once — a request waiting in the client's pool
/// for a connection waits against its own timeout, and holds a job's slot meanwhile.
@Suite("Webhook requests to one endpoint, many at once")
struct WebhookTransportTests {
    @Test(
        "as many deliveries to one slow endpoint as work runs jobs are all in flight together, each answered: 24 with the default (AsyncHTTPClient's pool let 8 a host through), 80 with 80 jobs",
        arguments: [(jobs: 0, requests: 24), (jobs: 80, requests: 80)])
    func manyAtOnce(jobs: Int, requests: Int) async throws {
        let transport = HTTPWebhookTransport(jobs: jobs)
        let inFlight = Mutex((now: 0, most: 0))
        let router = Router()
        router.post("/hook") { _, _ -> HTTPResponse.Status in
            inFlight.withLock {
                $0.now += 1
                $0.most = max($0.most, $0.now)
            }
            // Each answer waits until all the requests are in (or 8 s, under their 10 s timeout, for a loaded
            // machine's connections to open): with fewer connections than requests, the rest cannot arrive before
            // these answer.
            let deadline = ContinuousClock.now + .seconds(8)
            while inFlight.withLock({ $0.most }) < requests, ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(5)) }
            inFlight.withLock { $0.now -= 1 }
            return .noContent
        }
        try await Application(router: router).test(.live) { live in
            let url = try #require(URL(string: "http://127.0.0.1:\(live.port!)/hook"))
            let statuses = try await withThrowingTaskGroup(of: Int.self) { group in
                for index in 0..<requests {
                    group.addTask {
                        try await transport.post(
                            url, headers: [("webhook-id", "msg_\(index)")], body: Data("{}".utf8), timeout: .seconds(10)
                        ).status
                    }
                }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            #expect(statuses == Array(repeating: 204, count: requests))
            #expect(inFlight.withLock { $0.most } == requests, "at most \(inFlight.withLock { $0.most }) at once")
        }
        // The default on any machine is within the floor.
        #expect(HTTPWebhookTransport.minimumConnectionsPerEndpoint >= StorekeeperConfiguration.defaultWorkerConcurrency(cores: 64))
    }
}
