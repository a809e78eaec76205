import ArgumentParser
import Foundation
import NIOCore
import NIOHTTP1
import StorekeeperRuntime

struct HoldExpiryBenchmarkCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "hold-expiry",
        abstract: "Holds that all expire at once: how fast `work` releases them, and what that costs the spends beside it.",
        discussion: """
            Starts `serve` and `work` on a throwaway PostgreSQL and subscribes --accounts accounts (pro.monthly, 1,000 \
            credits each). Then: --connections clients spend 1 credit back to back for --seconds, the worker idle; \
            the worker stops and --holds holds of 1 credit are taken through the API, each to expire a \
            second later, so that all are expired and none released; the same spends run on that data, the worker \
            still stopped (the reference); the worker starts again and the same spends run while it releases them; \
            the spends run once more, the worker idle again. Prints the spend rate of each phase and the ratio of the \
            one during the release to the reference, and how long the release took (first to last hold ended).
            """)

    @Option(help: "Subscribed accounts.") var accounts = 500
    @Option(help: "Holds to expire at once.") var holds = 100_000
    @Option(help: "Concurrent clients.") var connections = 32
    @Option(help: "Seconds per spend phase.") var seconds = 10
    @Option(help: "A PostgreSQL server to create the benchmark database on (default: a private cluster).") var databaseURL: String?
    @Flag(help: "Print one JSON object on the last line.") var json = false

    func validate() throws {
        guard accounts > 0, holds > 0, connections > 0, seconds > 0 else {
            throw ValidationError("--accounts, --holds, --connections and --seconds must be positive")
        }
        guard holds <= accounts * 900 else { throw ValidationError("--holds may be at most 900 per account (each has 1,000 credits)") }
    }

    func run() async throws {
        let logger = commandLogger("storekeeper.bench")
        let report = try await BenchmarkDatabase.with(url: databaseURL, logger: logger) { url in
            let system = try SystemUnderTest(databaseURL: url, clients: connections, logger: logger)
            try system.migrate()
            do {
                try await system.startServe()
                var worker = try system.startWorker()
                let accountIds = try await system.subscribeAccounts(accounts, clients: connections)
                let headers = [("Authorization", "Bearer bench"), ("Content-Type", "application/json")]
                let hotPath = HotPathLoad(connections: connections, seconds: seconds)
                let spend: @Sendable (Int) -> LoadRequest = { _ in
                    let body = ByteBuffer(string: #"{"meter": "ai_requests", "amount": 1, "idempotencyKey": "\#(UUID())"}"#)
                    return LoadRequest(path: "/v1/accounts/\(accountIds.randomElement()!)/usage", method: .POST, headers: headers, body: body)
                }
                let before = try await hotPath.load(system, spend)

                system.kill(worker, signal: SIGTERM)
                let run = UUID().uuidString.prefix(8)
                let host = "127.0.0.1:\(system.port)"
                let taking = try await HTTPLoadGenerator.send(
                    host: "127.0.0.1", ports: system.ports, connections: connections, count: holds, rate: nil
                ) { index in
                    let body = ByteBuffer(
                        string: #"{"meter": "ai_requests", "amount": 1, "idempotencyKey": "expiry-\#(run)-\#(index)", "expiresIn": 1}"#)
                    return LoadRequest(
                        path: "/v1/accounts/\(accountIds[index % accountIds.count])/holds", method: .POST, headers: headers, body: body
                    )
                    .bytes(host: host)
                }
                guard taking.failed == 0, taking.answered == holds else {
                    throw CommandFailure("\(taking.failed) of \(holds) holds failed")
                }
                try await Self.waitUntil(deadline: .seconds(30)) {
                    try Self.count("SELECT count(*) FROM credit_holds WHERE state = 'held' AND expires_at > now()", url: url) == 0
                }
                // The reference: the same spends on the same data (every hold taken and due), the worker still stopped —
                // what the phase beside the release would be without the sweep. (`before` ran on a ledger without the
                // holds' rows, which a status or spend read sums: a reference the release could never match.)
                let reference = try await hotPath.load(system, spend)

                worker = try system.startWorker()
                let during = try await hotPath.load(system, spend)
                try await Self.waitUntil(deadline: .seconds(600)) {
                    try Self.count("SELECT count(*) FROM credit_holds WHERE state = 'held'", url: url) == 0
                }
                let releaseSeconds =
                    try Double(
                        BenchmarkDatabase.runTool(
                            "psql", ["-tAc", "SELECT extract(epoch FROM max(ended_at) - min(ended_at)) FROM credit_holds WHERE state = 'expired'"],
                            url: url
                        ).trimmingCharacters(in: .whitespacesAndNewlines)) ?? 0
                let expired = try Self.count("SELECT count(*) FROM credit_holds WHERE state = 'expired'", url: url)
                // 100,000 holds updated and as many ledger rows: vacuumed before the last phase, as pgbench vacuums
                // before it runs, so that phase does not carry autovacuum's catching up.
                _ = try BenchmarkDatabase.runTool("psql", ["-qc", "VACUUM (ANALYZE) credit_holds, credit_ledger"], url: url)
                let after = try await hotPath.load(system, spend)
                await system.stop()
                return Self.report(
                    before: before, taking: taking, reference: reference, during: during, after: after, expired: expired,
                    releaseSeconds: releaseSeconds,
                    accounts: accounts, connections: connections, seconds: seconds)
            } catch {
                await system.stop()
                throw error
            }
        }
        report.print(json: json)
    }

    private static func count(_ sql: String, url: DatabaseURL) throws -> Int {
        Int(try BenchmarkDatabase.runTool("psql", ["-tAc", sql], url: url).trimmingCharacters(in: .whitespacesAndNewlines)) ?? -1
    }

    /// Polls `condition` every 100 ms until it holds or `deadline` passes.
    private static func waitUntil(deadline: Duration, _ condition: () throws -> Bool) async throws {
        let end = ContinuousClock.now + deadline
        while try !condition() {
            guard ContinuousClock.now < end else { throw CommandFailure("not done within \(deadline)") }
            try await Task.sleep(for: .milliseconds(100))
        }
    }

    static func report(
        before: LoadPhase, taking: LoadPhase, reference: LoadPhase, during: LoadPhase, after: LoadPhase, expired: Int, releaseSeconds: Double,
        accounts: Int, connections: Int, seconds: Int
    ) -> BenchmarkReport {
        let ratio = during.rate / max(reference.rate, 0.001)
        func line(_ name: String, _ phase: LoadPhase) -> String {
            "  \(name.padding(toLength: 44, withPad: " ", startingAt: 0)) \(String(format: "%7.0f", phase.rate))/s  p99 "
                + "\(String(format: "%6.2f", phase.percentile(0.99))) ms  \(phase.failed) failed"
        }
        return BenchmarkReport(
            lines: [
                "hold-expiry: \(accounts) accounts, \(connections) clients, \(seconds) s a spend phase, serve + work and PostgreSQL on this machine",
                line("spends, worker idle (before)", before),
                line("holds taken (expiresIn 1, worker stopped)", taking),
                line("spends, all due, worker stopped (reference)", reference),
                line("spends while the worker releases", during),
                line("spends, worker idle (after)", after),
                String(
                    format: "  %d holds released in %.1f s (first to last end): %.0f/s", expired, releaseSeconds,
                    Double(expired) / max(releaseSeconds, 0.001)),
                String(format: "  spends during the release / the reference: %.2f (target ≥ 0.90)", ratio),
            ],
            fields: [
                ("spendsBeforePerSecond", .integer(Int(before.rate))), ("spendsReferencePerSecond", .integer(Int(reference.rate))),
                ("spendsDuringPerSecond", .integer(Int(during.rate))),
                ("spendsAfterPerSecond", .integer(Int(after.rate))), ("spendRatio", .number(ratio)),
                ("holdsTakenPerSecond", .integer(Int(taking.rate))),
                ("holdsExpired", .integer(expired)), ("releaseSeconds", .number(releaseSeconds)),
                ("releasedPerSecond", .integer(Int(Double(expired) / max(releaseSeconds, 0.001)))),
            ])
    }
}
