import AppStoreModels
import ArgumentParser
import Crypto
import Foundation
import NIOCore
import StorekeeperRuntime

struct RetentionBenchmarkCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "retention",
        abstract: "Latency of POST /apple/retention-message at a fixed rate against /healthz, with and without the database.",
        discussion: """
            Starts serve and work on a private PostgreSQL cluster with a retention policy of four rules (a \
            promotional offer signed with an In-App Purchase key, a plan switch, two messages) and a default, \
            subscribes --accounts accounts and spends on a third of them, so rules differ by real usage. Each of \
            --runs runs sends Apple-signed retention requests (each its own requestIdentifier) open loop at --rate a \
            second for --seconds, with GET /healthz on every eighth connection at the same pace as the same run's \
            reference, and prints p50 and p99 of both and their ratio. Then it stops PostgreSQL and runs once more: \
            every answer must be the default, within the policy's deadline (Apple stops waiting at 700 ms), on as \
            many connections as the rate (an answer may take the whole deadline then).
            """
    )

    @Option(help: "Retention requests a second.") var rate = 200
    @Option(help: "Seconds a run (after one second not counted).") var seconds = 10
    @Option(help: "Runs with the database up.") var runs = 5
    @Option(help: "Subscribed accounts the requests are about.") var accounts = 300
    @Option(help: "Client connections.") var connections = 16
    @Flag(help: "Print one JSON object on the last line.") var json = false

    func validate() throws {
        guard rate > 0, seconds > 0, runs > 0, accounts > 0, connections > 0 else {
            throw ValidationError("--rate, --seconds, --runs, --accounts and --connections must be positive")
        }
    }

    static let messages = (
        offer: "0b8e6a51-2c3d-4e5f-8a9b-1c2d3e4f5a6b", never: "4a7d2c19-8e6f-4b3a-9c1d-2e3f4a5b6c7d",
        annual: "9c3e5f71-6a2b-4d8c-8e1f-3a4b5c6d7e8f", loyal: "5d2a8b3c-1e4f-4a6b-9c7d-8e9f0a1b2c3d",
        fallback: "6f0b1c7e-3b1f-4b7a-9a43-6d1f3c2b9e10"
    )
    static let policy = """
        deadline_ms: 300
        default: { message: \(messages.fallback) }
        rules:
          - name: idle_offer
            when: { spent_share_below: 0.2, offers_given_below: 1 }
            answer: { promotional_offer: { offer: stay, message: \(messages.offer) } }
          - name: never_started
            when: { never_spent: true }
            answer: { message: \(messages.never) }
          - name: heavy_to_max
            when: { spent_share_at_least: 0.5 }
            answer: { alternate_product: { product: max.monthly, message: \(messages.annual) } }
          - name: loyal
            when: { months_subscribed_at_least: 0 }
            answer: { message: \(messages.loyal) }
        """

    func run() async throws {
        let logger = commandLogger("storekeeper.bench")
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("storekeeper-retention-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let key = directory.appendingPathComponent("AuthKey_BENCH.p8")
        try P256.Signing.PrivateKey().pemRepresentation.write(to: key, atomically: true, encoding: .utf8)
        let environment = [
            "STOREKEEPER_RETENTION": Self.policy,
            "STOREKEEPER_OFFERS": #"{"offers": [{"id": "stay", "product": "pro.monthly", "audience": "active", "once_per_account": false}]}"#,
            "STOREKEEPER_ASSA_ISSUER_ID": "issuer", "STOREKEEPER_ASSA_KEY_ID": "BENCH", "STOREKEEPER_ASSA_PRIVATE_KEY": key.path,
            // Apple's API is never called here: nothing listens on port 1.
            "STOREKEEPER_ASSA_BASE_URL": "http://127.0.0.1:1",
        ]
        let report = try await BenchmarkDatabase.withPrivateCluster(named: "storekeeper-bench") { cluster, url in
            let system = try SystemUnderTest(databaseURL: url, clients: connections, environment: environment, logger: logger)
            do {
                try system.migrate()
                try await system.startServe()
                _ = try system.startWorker()
                let report = try await measure(system, stopDatabase: { cluster.stop(immediately: true) })
                await system.stop()
                return report
            } catch {
                await system.stop()
                throw error
            }
        }
        report.print(json: json)
    }

    struct Run {
        var phase: LoadPhase
        var answers: [String: Int]
    }

    func measure(_ system: SystemUnderTest, stopDatabase: () -> Void) async throws -> BenchmarkReport {
        let accountIds = try await system.subscribeAccounts(accounts, clients: connections)
        // A third of the accounts spend: 1 of 1,000 (idle), 600 (heavy) or 150; the rest never did.
        for (index, account) in accountIds.enumerated() where index % 3 == 0 {
            let amount = [1, 600, 150][(index / 3) % 3]
            let body = ByteBuffer(string: #"{"meter": "ai_requests", "amount": \#(amount), "idempotencyKey": "bench-\#(index)"}"#)
            let (status, _, answer) = await system.request(
                "/v1/accounts/\(account)/usage", method: .POST, headers: [("Authorization", "Bearer bench"), ("Content-Type", "application/json")],
                body: body)
            guard status == 200 else { throw CommandFailure("a spend before the runs answered \(status.map(String.init) ?? "nothing"): \(answer)") }
        }
        let subscriptions = (0..<accounts).map { String(3_000_000_000_000 + $0) }
        let hotPath = HotPathLoad(connections: connections / 2, seconds: seconds)
        var runsUp: [Run] = []
        for _ in 0..<runs { runsUp.append(try await self.run(system, hotPath: hotPath, subscriptions: subscriptions)) }
        let decided = try await system.text(
            "SELECT string_agg(rule || ' ' || n, ', ' ORDER BY n DESC) FROM (SELECT rule, count(*) AS n FROM retention_decisions GROUP BY rule) AS r")
        stopDatabase()
        // With the database away each answer may wait for the whole deadline (the pool waits to reconnect): enough
        // connections for `rate` requests a second each in flight that long, as Apple's callers are, so the client's
        // one request per connection does not queue them.
        let down = try await self.run(
            system, hotPath: HotPathLoad(connections: max(connections, rate / 2), seconds: seconds), subscriptions: subscriptions)
        // What the answers said with the database away, read one by one: the load generator only frames them.
        var sampled = 0
        var defaults = 0
        for index in 0..<20 {
            let request = RetentionRequestPayload(
                originalTransactionId: subscriptions[index], appAppleId: nil, productId: "pro.monthly", userLocale: "en-US",
                requestIdentifier: UUID().uuidString, signedDate: Int64(Date().timeIntervalSince1970 * 1000), environment: .sandbox)
            let body = ByteBuffer(string: #"{"signedPayload": "\#(try system.signer.signer.sign(request))"}"#)
            let (status, _, answer) = await system.request(
                "/apple/retention-message", method: .POST, headers: [("Content-Type", "application/json")], body: body)
            sampled += 1
            if status == 200 && answer.contains(Self.messages.fallback) { defaults += 1 }
        }

        var report = BenchmarkReport()
        report.lines = [
            "retention: POST /apple/retention-message at \(rate)/s for \(seconds) s, open loop, \(connections) connections; /healthz beside it (ms)"
        ]
        report.lines.append("  run   p50    p99    healthz p50  p99    p99 ratio  failed  answers")
        func line(_ name: String, _ run: Run) -> String {
            let phase = run.phase
            let answers = run.answers.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", ")
            return "  " + name.padding(toLength: 5, withPad: " ", startingAt: 0)
                + String(
                    format: "%6.2f %6.2f   %6.2f     %6.2f  %7.1f×   %6d  ", phase.percentile(0.5), phase.percentile(0.99),
                    phase.referencePercentile(0.5), phase.referencePercentile(0.99),
                    phase.percentile(0.99) / max(phase.referencePercentile(0.99), 0.001), phase.failed) + answers
        }
        for (index, run) in runsUp.enumerated() { report.lines.append(line("\(index + 1)", run)) }
        report.lines.append(line("down", down))
        let p99s = runsUp.map { $0.phase.percentile(0.99) }.sorted()
        let ratios = runsUp.map { $0.phase.percentile(0.99) / max($0.phase.referencePercentile(0.99), 0.001) }.sorted()
        let median = p99s[p99s.count / 2]
        report.lines += [
            String(
                format: "  p99 over %d runs: median %.2f ms (%.2f–%.2f); ratio to /healthz's p99: median %.1f× (%.1f–%.1f×)",
                runs, median, p99s.first!, p99s.last!, ratios[ratios.count / 2], ratios.first!, ratios.last!),
            String(
                format:
                    "  database stopped: p99 %.2f ms, %d answered 200, %d failed; %d of %d read one by one were the default message (policy deadline 300 ms; Apple waits 700 ms)",
                down.phase.percentile(0.99), down.phase.answered, down.phase.failed, defaults, sampled),
            "  decisions stored: \(decided)",
        ]
        report.fields = [
            ("p99MedianMs", .number(median)), ("p99MinMs", .number(p99s.first!)), ("p99MaxMs", .number(p99s.last!)),
            ("p99RatioToHealthz", .number(ratios[ratios.count / 2])), ("downP99Ms", .number(down.phase.percentile(0.99))),
            ("downDefaultsRead", .integer(defaults)), ("downRead", .integer(sampled)), ("downAnswered", .integer(down.phase.answered)),
            ("downFailed", .integer(down.phase.failed)),
        ]
        return report
    }

    /// One run: fresh signed requests, each its own identifier and signed just before the run (a request is refused
    /// five minutes after it was signed), about the subscriptions in turn.
    func run(_ system: SystemUnderTest, hotPath: HotPathLoad, subscriptions: [String]) async throws -> Run {
        let count = rate * 2 * (seconds + 2)
        let now = Int64(Date().timeIntervalSince1970 * 1000)
        let bodies = try (0..<count).map { index in
            let request = RetentionRequestPayload(
                originalTransactionId: subscriptions[index % subscriptions.count], appAppleId: nil, productId: "pro.monthly", userLocale: "en-US",
                requestIdentifier: UUID().uuidString, signedDate: now, environment: .sandbox)
            return ByteBuffer(string: #"{"signedPayload": "\#(try system.signer.signer.sign(request))"}"#)
        }
        let started = Date()
        let phase = try await hotPath.pace(system, rate: rate, reference: LoadRequest(path: "/healthz", method: .GET)) { index in
            LoadRequest(path: "/apple/retention-message", method: .POST, headers: [("Content-Type", "application/json")], body: bodies[index % count])
        }
        // The answers given, by kind, as stored (nothing when the database is away).
        var answers: [String: Int] = [:]
        let since = ISO8601DateFormatter().string(from: started)
        if let counts = try? await system.text(
            """
            SELECT string_agg(coalesce(answer_kind, 'none') || '=' || n, ',') FROM (
                SELECT answer_kind, count(*) AS n FROM retention_decisions WHERE decided_at >= '\(since)' GROUP BY answer_kind) AS c
            """)
        {
            for pair in counts.split(separator: ",") {
                let parts = pair.split(separator: "=")
                if parts.count == 2 { answers[String(parts[0])] = Int(parts[1]) }
            }
        }
        return Run(phase: phase, answers: answers)
    }
}
