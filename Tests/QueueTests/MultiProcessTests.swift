import Foundation
import LocalSigning
import StorekeeperRuntime
import Testing

@testable import IntegrationSupport

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Two `serve` and two `work` processes on one database, as an operator scales out: what one serve wrote, the other
/// answers; notifications taken in by either are applied once by one of the workers.
@Suite("Several serve and work processes on one database")
struct MultiProcessTests {
    /// What docs/operations.md promises: a change committed through one `serve` is in another's answers within this
    /// (its status cache drops the account when the database's NOTIFY arrives — milliseconds; the bound leaves room
    /// for a loaded test machine).
    static let visibilityBound: Duration = .seconds(2)

    struct Server {
        let port: Int
        let process: TestProcess

        /// The answer's status and its body.
        func request(_ method: String, _ path: String, body: String? = nil) async throws -> (Int, Data) {
            var request = URLRequest(url: URL(string: "http://127.0.0.1:\(port)\(path)")!)
            request.httpMethod = method
            request.setValue("Bearer \(StorekeeperHarness.apiKey)", forHTTPHeaderField: "Authorization")
            if let body {
                request.setValue("application/json", forHTTPHeaderField: "Content-Type")
                request.httpBody = Data(body.utf8)
            }
            let (data, response) = try await URLSession.shared.data(for: request)
            return ((response as? HTTPURLResponse)?.statusCode ?? 0, data)
        }

        func remaining(_ account: UUID) async throws -> Int? {
            let (_, body) = try await request("GET", "/v1/accounts/\(account)/status")
            return try decode(StatusAnswer.self, body).credits["ai_requests"]?.remaining.map(Int.init)
        }

        func tier(_ account: UUID) async throws -> String? {
            try decode(StatusAnswer.self, try await request("GET", "/v1/accounts/\(account)/status").1).tier
        }
    }

    @Test("a spend through one serve shows in the other's status within the bound; notifications to both are applied once")
    func twoServesTwoWorkers() async throws {
        try await StorekeeperHarness.run(worker: false) { harness in
            var servers: [Server] = []
            for _ in 0..<2 {
                let port = try PrivateCluster.freePort()
                var environment = harness.processEnvironment
                environment["STOREKEEPER_PORT"] = String(port)
                servers.append(Server(port: port, process: try TestProcess("storekeeper", arguments: ["serve"], environment: environment)))
            }
            let workers = try (0..<2).map { _ in try TestProcess("storekeeper", arguments: ["work"], environment: harness.processEnvironment) }
            defer { for process in servers.map(\.process) + workers { process.signal(SIGTERM) } }
            for server in servers {
                try await eventually(timeout: .seconds(60), "serve on \(server.port) to listen") {
                    (try? await server.request("GET", "/healthz"))?.0 == 200
                }
            }
            try await eventually(timeout: .seconds(60), "both workers to start") { workers.allSatisfy { $0.text.contains("worker started") } }
            let (a, b) = (servers[0], servers[1])

            // The free tier's five a day: read through B (now in B's cache), spend through A, read through B again.
            let account = UUID()
            #expect(try await b.remaining(account) == 5)
            let spent = try await a.request(
                "POST", "/v1/accounts/\(account)/usage", body: #"{"meter": "ai_requests", "amount": 2, "idempotencyKey": "k1"}"#)
            #expect(spent.0 == 200, "\(String(decoding: spent.1, as: UTF8.self))")
            #expect(try decode(UsageAnswer.self, spent.1).remaining == 3)
            let started = ContinuousClock.now
            try await eventually(timeout: Self.visibilityBound, "B to answer the spend made through A") { try await b.remaining(account) == 3 }
            let seen = ContinuousClock.now - started
            #expect(try await a.remaining(account) == 3)
            #expect(seen < Self.visibilityBound)
            print("MultiProcessTests: the spend through A was in B's status after \(seen)")

            // Notifications to either intake, applied by one of the workers exactly once; each read through the other serve.
            var accounts: [UUID] = []
            for index in 0..<6 {
                let account = UUID()
                accounts.append(account)
                let event = SimulatedEvent.scenario(
                    .subscribe, subscription: harness.subscription(account: account), currentPeriod: nil, target: nil,
                    at: Date().addingTimeInterval(-60))
                var request = URLRequest(url: URL(string: "http://127.0.0.1:\(servers[index % 2].port)/notifications/apple")!)
                request.httpMethod = "POST"
                request.setValue("application/json", forHTTPHeaderField: "Content-Type")
                request.httpBody = try harness.signer.requestBody(for: event, notificationUUID: UUID())
                let (_, response) = try await URLSession.shared.data(for: request)
                #expect((response as? HTTPURLResponse)?.statusCode == 200)
            }
            for (index, account) in accounts.enumerated() {
                let other = servers[(index + 1) % 2]
                try await eventually(timeout: .seconds(30), "account \(index) on pro through the other serve") {
                    try await other.tier(account) == "pro"
                }
            }
            #expect(try await harness.count("SELECT count(*) FROM notifications WHERE applied_at IS NOT NULL") == 6)
            #expect(try await harness.count("SELECT count(*) FROM subscriptions") == 6)
            for process in servers.map(\.process) + workers {
                process.signal(SIGTERM)
                #expect(await process.waitForExit() == 0)
            }
        }
    }

    @Test("a work process whose pool cannot fit max_connections says so at start, with the figures, and keeps running")
    func poolBeyondMaxConnections() async throws {
        try await StorekeeperHarness.run(worker: false) { harness in
            var environment = harness.processEnvironment
            environment["STOREKEEPER_WORKER_CONCURRENCY"] = "1024"
            let work = try TestProcess("storekeeper", arguments: ["work"], environment: environment)
            try await eventually(timeout: .seconds(60), "the connection budget error") {
                work.text.contains("this process may open 1028 database connections but the server allows")
            }
            // The worker logs its start after the budget's error: waited for, not read at one instant.
            try await eventually(timeout: .seconds(60), "the worker to start") { work.text.contains("worker started") }
            let stopping = ContinuousClock.now
            work.signal(SIGTERM)
            // Past the service group's 30 s grace for jobs still in flight, so a slow stop on a loaded machine is
            // not mistaken for a failed one; the output names a real failure.
            let status = await work.waitForExit(timeout: .seconds(45))
            print("MultiProcessTests: work with 1024 slots stopped \(ContinuousClock.now - stopping) after SIGTERM")
            #expect(
                status == 0,
                "work's exit status \(status.map { "\($0)" } ?? "none: still running 45 s after SIGTERM"); its output ends: \(work.text.suffix(3000))"
            )
        }
    }
}
