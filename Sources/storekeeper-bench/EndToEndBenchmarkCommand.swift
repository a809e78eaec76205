import AppStoreModels
import ArgumentParser
import AsyncHTTPClient
import Foundation
import LocalSigning
import Logging
import NIOCore
import Persistence
import PostgresNIO
import StorekeeperRuntime
import Synchronization

struct EndToEndBenchmarkCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "e2e",
        abstract: "Distinct signed notifications POSTed over HTTP to `serve` + `work` processes until every one is applied.",
        discussion: """
            Starts `storekeeper serve` and `storekeeper work` as processes on a throwaway PostgreSQL (a private cluster, \
            or a fresh database on --database-url's server), signs --notifications distinct notifications with a local \
            Apple-shaped chain, POSTs them from --clients concurrent clients as fast as they are answered (intake/s, \
            latency), waits until all are applied (applied/s), then sends at a steady --rate for --steady-seconds \
            (latency at that rate), and reports the processes' peak resident memory and the CPU a notification cost \
            `serve`, `work` and PostgreSQL (when it runs on this machine) while the burst was sent and until the last \
            was applied, with the rate that CPU would allow on all of this machine's cores. The private cluster's WAL is \
            warmed first, as a running server's is (--cold-wal leaves it new). References on the same cluster: pgbench \
            TPC-B with --clients clients for the rates, and TPC-B at the steady --rate, open loop, for that phase's \
            latency.
            """)

    @Option(help: "Notifications in the burst.") var notifications = 20_000
    @Option(help: "Concurrent HTTP clients.") var clients = 32
    @Option(help: "Requests per second of the steady phase.") var rate = 500
    @Option(help: "Length of the steady phase in seconds.") var steadySeconds = 10
    @Option(help: "A PostgreSQL server to create the benchmark database on (default: a private cluster).") var databaseURL: String?
    @Flag(help: "Start `work` only after the burst is in: intake and applying measured apart.") var sequential = false
    @Flag(help: "Private cluster only: do not warm its WAL; the run creates every WAL segment it needs, as a new server does.")
    var coldWAL = false
    @Option(help: "Subscriptions and applied notifications stored before the run, for the growth curve.") var preload = 0
    @Option(help: "`serve` and `work` processes of each kind on the one database (the load spread over the serves).") var processes = 1
    @Flag(help: "Print one JSON object on the last line.") var json = false

    func validate() throws {
        guard notifications > 0, clients > 0, rate > 0, steadySeconds >= 0, (1...16).contains(processes) else {
            throw ValidationError("--notifications, --clients and --rate must be positive, --steady-seconds not negative, --processes 1–16")
        }
        if coldWAL && databaseURL != nil {
            throw ValidationError("--cold-wal applies to the private cluster only: a server on --database-url keeps its own WAL")
        }
    }

    func run() async throws {
        let logger = commandLogger("storekeeper.bench")
        let report = try await BenchmarkDatabase.with(url: databaseURL, coldWAL: coldWAL, logger: logger) { url in
            try await EndToEndRun(options: self, databaseURL: url, logger: logger).run()
        }
        report.print(json: json)
    }
}

/// One end-to-end run: processes up, burst, drain, steady phase, processes down.
struct EndToEndRun {
    let options: EndToEndBenchmarkCommand
    let databaseURL: DatabaseURL
    let logger: Logger

    func run() async throws -> BenchmarkReport {
        let system = try SystemUnderTest(databaseURL: databaseURL, clients: options.clients, logger: logger)
        try system.migrate()
        if options.preload > 0 { try await preload(options.preload) }
        let runStarted = Date()
        let steadyCount = options.rate * options.steadySeconds
        let start = Date()
        let bodies = try (0..<(options.notifications + steadyCount)).map { index in
            try system.subscribe(index, at: start.addingTimeInterval(Double(index) / 1000)).body
        }
        do {
            try await system.startServe()
            for _ in 1..<options.processes { try await system.startAdditionalServe() }
            if !options.sequential { for _ in 0..<options.processes { try system.startWorker() } }
            let postmaster = try await ProcessCPU.postmaster(of: system)
            let beforeBurst = SystemCPU.used(by: system, postmaster: postmaster)
            let burst = try await system.send(Array(bodies.prefix(options.notifications)), clients: options.clients, rate: nil)
            let drainStarted = Date()
            let afterBurst = SystemCPU.used(by: system, postmaster: postmaster)
            if options.sequential { for _ in 0..<options.processes { try system.startWorker() } }
            let appliedPerSecond = try await system.waitUntilApplied(
                options.notifications, receivedSince: runStarted, since: options.sequential ? drainStarted : nil)
            let applied = SystemCPU.used(by: system, postmaster: postmaster)
            let cpu = (
                burst: afterBurst.cost(since: beforeBurst, per: options.notifications),
                drain: applied.cost(since: afterBurst, per: options.notifications)
            )
            let steady = try await system.send(Array(bodies.dropFirst(options.notifications)), clients: options.clients, rate: options.rate)
            _ = try await system.waitUntilApplied(options.notifications + steadyCount, receivedSince: runStarted)
            let memory = system.peakResidentBytes
            await system.stop()
            // The same cluster's durable-commit rate with as many clients: what intake and applying are held against.
            let tpcb = try BenchmarkDatabase.pgbench([], clients: options.clients, seconds: 5, url: databaseURL)
            // The steady rate's reference: durable TPC-B commits at that rate, open loop, on the same cluster and disk —
            // what a commit alone waits for at 500/s here, the floor under any intake's latency at that rate.
            let steadyReference =
                options.steadySeconds > 0
                ? try BenchmarkDatabase.pacedTPCB(rate: options.rate, clients: options.clients, seconds: options.steadySeconds, url: databaseURL)
                : nil
            return report(
                burst: burst, steady: steady, steadyReference: steadyReference, appliedPerSecond: appliedPerSecond, cpu: cpu,
                tpcb: tpcb.tps, serveRSS: memory.serve, workRSS: memory.work)
        } catch {
            await system.stop()
            throw error
        }
    }

    /// Stores `count` active subscriptions, each with one applied notification (small raw payload), as an app with a
    /// history would have; one statement each.
    func preload(_ count: Int) async throws {
        try await PostgresClient.withRunning(databaseURL.clientConfiguration(maximumConnections: 1), logger: logger) { client in
            try await client.query(
                """
                INSERT INTO subscriptions (original_transaction_id, account_id, product_id, environment, status, will_renew,
                    auto_renew_product_id, purchase_date, expires_at, is_trial, ownership, latest_transaction_id,
                    last_event_type, last_signed_date, last_event_id, billing_period, store)
                SELECT (5000000000000 + g)::text, gen_random_uuid(), 'pro.monthly', 'Sandbox', 'active', true, 'pro.monthly',
                    now() - interval '1 day', now() + interval '29 days', false, 'PURCHASED', (5000000000000 + g)::text,
                    'SUBSCRIBED', 0, '', (5000000000000 + g)::text, 'app_store'
                FROM generate_series(1, \(count)) AS g
                """, logger: logger)
            try await client.query(
                """
                INSERT INTO notifications (notification_uuid, notification_type, environment, original_transaction_id, signed_date,
                    signed_payload, decoded, received_at, applied_at, apply_outcome)
                SELECT gen_random_uuid(), 'SUBSCRIBED', 'Sandbox', (5000000000000 + g)::text, 0, repeat('x', 500),
                    '{"payload": {}}'::jsonb, now() - interval '1 day', now() - interval '1 day', 'applied'
                FROM generate_series(1, \(count)) AS g
                """, logger: logger)
            try await client.query("VACUUM ANALYZE subscriptions", logger: logger)
            try await client.query("VACUUM ANALYZE notifications", logger: logger)
        }
    }

    func report(
        burst: SystemUnderTest.SendPhase, steady: SystemUnderTest.SendPhase, steadyReference: LoadPhase?, appliedPerSecond: Double,
        cpu: (burst: SystemCPU.Cost, drain: SystemCPU.Cost),
        tpcb: Double, serveRSS: Int, workRSS: Int
    ) -> BenchmarkReport {
        let cores = ProcessInfo.processInfo.activeProcessorCount
        let all = cpu.burst + cpu.drain
        // The rate the processes' CPU allows if they had every core: the load generator, anything else on the machine
        // and the cores' shared parts (SMT) not counted, so above what they can reach.
        let ceiling = Double(cores) * 1e6 / max(all.total, 1)
        let intakePerSecond = Double(burst.accepted) / max(burst.seconds, 0.001)
        let megabytes = { (bytes: Int) in Double(bytes) / 1_048_576 }
        var report = BenchmarkReport()
        report.lines = [
            "e2e: \(burst.sent) notifications from \(options.clients) clients to \(options.processes) serve + \(options.processes) work, PostgreSQL beside them"
                + (options.preload > 0 ? ", on top of \(options.preload) stored subscriptions and notifications" : "")
                + (options.databaseURL != nil ? "" : options.coldWAL ? " (new cluster, cold WAL)" : " (private cluster, WAL warmed)"),
            "  intake:  \(Int(intakePerSecond)) notifications/s (\(burst.accepted) accepted, \(burst.failed) failed) in \(String(format: "%.2f", burst.seconds)) s; "
                + "latency p50 \(String(format: "%.2f", burst.percentile(0.5))) ms, p99 \(String(format: "%.2f", burst.percentile(0.99))) ms",
            "  applied: \(Int(appliedPerSecond)) notifications/s (\(options.sequential ? "work started after the burst" : "while the intake ran; first received to last applied"))",
            "  steady \(options.rate)/s for \(options.steadySeconds) s: \(steady.accepted) accepted, \(steady.failed) failed; "
                + "latency p50 \(String(format: "%.2f", steady.percentile(0.5))) ms, p99 \(String(format: "%.2f", steady.percentile(0.99))) ms"
                + (steadyReference.map { reference in
                    "; pgbench TPC-B at the same rate (reference) p50 \(String(format: "%.2f", reference.percentile(0.5))) ms, p99 "
                        + "\(String(format: "%.2f", reference.percentile(0.99))) ms: p99 "
                        + "\(String(format: "%.2f", steady.percentile(0.99) / max(reference.percentile(0.99), 0.001)))× the reference's"
                } ?? ""),
            "  reference: pgbench TPC-B (durable, \(options.clients) clients, scale \(options.clients)) \(Int(tpcb)) tps on the same cluster; intake \(String(format: "%.2f", intakePerSecond / max(tpcb, 0.001)))× "
                + "(issue 56: ≥ 0.5×), applied \(String(format: "%.2f", appliedPerSecond / max(tpcb, 0.001)))× (≥ 0.25×)",
            "  CPU a notification: while the burst was sent \(cpu.burst.described); then until the last was applied \(cpu.drain.described); "
                + "\(Int(all.total.rounded())) µs in all\(all.database == nil ? " (PostgreSQL runs elsewhere: not counted)" : ""): "
                + "a ceiling of \(Int(ceiling)) notifications/s if these processes had all \(cores) cores",
            "  peak resident: serve \(String(format: "%.1f", megabytes(serveRSS))) MB + work \(String(format: "%.1f", megabytes(workRSS))) MB = \(String(format: "%.1f", megabytes(serveRSS + workRSS))) MB",
            Autogroups.line,
        ]
        report.fields = [
            ("benchmark", .text("e2e")), ("notifications", .integer(burst.sent)), ("clients", .integer(options.clients)),
            ("preloaded", .integer(options.preload)), ("processes", .integer(options.processes)),
            ("intakePerSecond", .integer(Int(intakePerSecond))), ("intakeP50Ms", .number(burst.percentile(0.5))),
            ("intakeP99Ms", .number(burst.percentile(0.99))), ("appliedPerSecond", .integer(Int(appliedPerSecond))),
            ("steadyRate", .integer(options.rate)), ("steadyP50Ms", .number(steady.percentile(0.5))),
            ("steadyP99Ms", .number(steady.percentile(0.99))),
            ("steadyReferenceP50Ms", steadyReference.map { .number($0.percentile(0.5)) } ?? .null),
            ("steadyReferenceP99Ms", steadyReference.map { .number($0.percentile(0.99)) } ?? .null),
            ("steadyP99Ratio", steadyReference.map { .number(steady.percentile(0.99) / max($0.percentile(0.99), 0.001)) } ?? .null),
            ("failed", .integer(burst.failed + steady.failed)),
            ("peakRssMB", .number(megabytes(serveRSS + workRSS))), ("pgbenchTPCB", .integer(Int(tpcb))),
            ("intakeRatio", .number(intakePerSecond / max(tpcb, 0.001))), ("appliedRatio", .number(appliedPerSecond / max(tpcb, 0.001))),
            ("burstServeMicros", .number(cpu.burst.serve)), ("burstWorkMicros", .number(cpu.burst.work)),
            ("burstDatabaseMicros", cpu.burst.database.map { .number($0) } ?? .null), ("drainServeMicros", .number(cpu.drain.serve)),
            ("drainWorkMicros", .number(cpu.drain.work)), ("drainDatabaseMicros", cpu.drain.database.map { .number($0) } ?? .null),
            ("cpuMicrosPerNotification", .number(all.total)), ("cores", .integer(cores)), ("cpuCeilingPerSecond", .integer(Int(ceiling))),
            Autogroups.field,
        ]
        return report
    }
}
