import Analytics
import ArgumentParser
import AsyncHTTPClient
import Foundation
import LocalSigning
import Logging
import NIOCore
import Persistence
import PostgresNIO
import StorekeeperRuntime

struct AnalyticsBenchmarkCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "analytics",
        abstract: "Chart answer times on a year of generated subscribers, and what keeping the rollups costs each applied notification.",
        discussion: """
            On a throwaway PostgreSQL: generates --subscribers subscribers (a year of trials, renewals, churn and \
            comebacks, refunds, four currencies, the App Store and Stripe), computes each one's contribution with the \
            function the workers use, and loads the sums as the daily rollups, with --pending differences not yet \
            folded (a minute's worth at 1,000 applies a second). Then times every chart of GET /admin/analytics over 12 \
            months by day through a `serve` process, --requests times each, beside the same server's /healthz, with the \
            differences pending and again after folding them. Last, applies --notifications signed renewals with \
            STOREKEEPER_ANALYTICS off and on, four times each in turn, and prints what the rollups cost per notification (the median of adjacent pairs).
            """)

    @Option(help: "Generated subscribers.") var subscribers = 100_000
    @Option(help: "Differences pending compaction while the charts are timed.") var pending = 480_000
    @Option(help: "Requests per chart (and to /healthz) in each timing.") var requests = 20
    @Option(help: "Notifications applied in each on/off round of the cost phase (0 skips it).") var notifications = 10_000
    @Option(help: "A PostgreSQL server to create the benchmark database on (default: a private cluster).") var databaseURL: String?
    @Flag(help: "Print one JSON object on the last line.") var json = false

    func validate() throws {
        guard subscribers > 0, pending >= 0, requests > 0, notifications >= 0 else {
            throw ValidationError("--subscribers and --requests must be positive, --pending and --notifications not negative")
        }
    }

    func run() async throws {
        let logger = commandLogger("storekeeper.bench")
        let report = try await BenchmarkDatabase.with(url: databaseURL, coldWAL: false, logger: logger) { url in
            try await AnalyticsRun(options: self, databaseURL: url, logger: logger).run()
        }
        report.print(json: json)
    }
}

/// One `bench analytics` run.
struct AnalyticsRun {
    let options: AnalyticsBenchmarkCommand
    let databaseURL: DatabaseURL
    let logger: Logger
    static let adminKey = "bench-admin"

    func run() async throws -> BenchmarkReport {
        var report = BenchmarkReport()
        let system = try SystemUnderTest(
            databaseURL: databaseURL, clients: 4, environment: ["STOREKEEPER_ADMIN_KEYS": "bench:viewer:\(Self.adminKey)"], logger: logger)
        try system.migrate()
        let today = Date()
        let loaded = try await load(today: today)
        report.lines.append(
            "analytics: \(options.subscribers) generated subscribers, \(loaded.periods) billing periods, generated and summed in "
                + String(format: "%.1f s", loaded.generation) + ", \(loaded.rows) daily rollup rows (\(loaded.size)) loaded in "
                + String(format: "%.1f s", loaded.load) + "; \(options.pending) differences pending")
        report.fields += [("subscribers", .integer(options.subscribers)), ("rollup_rows", .integer(loaded.rows))]
        do {
            try await system.startServe()
            let from = AnalyticsDay(today).adding(days: -364)
            let to = AnalyticsDay(today)
            for (label, fold) in [("pending", false), ("folded", true)] {
                if fold {
                    try await PostgresClient.withRunning(databaseURL.clientConfiguration(maximumConnections: 1), logger: logger) { client in
                        // Every pending difference, in the job's bounded transactions.
                        while try await client.withFencedTransaction(logger: logger, { try await AnalyticsRollups(logger: logger).compact(on: $0) })
                            > 0
                        {}
                        try await client.query("VACUUM ANALYZE analytics_daily", logger: logger)
                        try await client.query("VACUUM ANALYZE analytics_deltas", logger: logger)
                    }
                }
                report.lines.append(
                    "  12 months by day (\(from) to \(to)), \(options.requests) requests each, \(label == "pending" ? "with the differences pending" : "after folding them"):"
                )
                var worst = 0.0
                for metric in AnalyticsMetric.allCases {
                    let path = "/admin/analytics/\(metric.rawValue)?from=\(from)&to=\(to)&environment=production"
                    let (chart, healthz) = try await time(path, system: system)
                    worst = max(worst, LoadPhase.percentile(0.5, of: chart))
                    let (p50, p99, reference) = (
                        LoadPhase.percentile(0.5, of: chart), LoadPhase.percentile(0.99, of: chart), LoadPhase.percentile(0.5, of: healthz)
                    )
                    report.lines.append(
                        "    \(metric.rawValue.padding(toLength: 19, withPad: " ", startingAt: 0)) p50 \(String(format: "%7.1f", p50)) ms, max \(String(format: "%7.1f", p99)) ms;"
                            + " /healthz beside it p50 \(String(format: "%.2f", reference)) ms (\(String(format: "%.0f", p50 / max(reference, 0.001)))×)"
                    )
                    report.fields.append(("\(label)_\(metric.rawValue.replacingOccurrences(of: "-", with: "_"))_p50_ms", .number(p50)))
                }
                report.lines.append("    slowest chart p50: \(String(format: "%.1f", worst)) ms (goal ≤ 200 ms)")
                report.fields.append(("\(label)_slowest_p50_ms", .number(worst)))
            }
            if options.notifications > 0 {
                let rounds = try await cost(system: system)
                // Each pair of adjacent rounds (off, on) is compared, and the pairs' median reported: the third round of
                // every run applies several times slower whichever mode it runs (found, not explained), which would
                // bias a comparison of the modes' own medians.
                let pairs = stride(from: 0, to: rounds.count - 1, by: 2).map { rounds[$0 + 1].perSecond / max(rounds[$0].perSecond, 0.001) }
                let ratio = LoadPhase.percentile(0.5, of: pairs)
                let off = LoadPhase.percentile(0.5, of: rounds.filter { !$0.analytics }.map(\.perSecond))
                report.lines.append(
                    "  applying \(options.notifications) signed first purchases per round (work started after the intake), rounds in turn: "
                        + rounds.map { "\($0.analytics ? "on" : "off") \(Int($0.perSecond))/s" }.joined(separator: ", "))
                report.lines.append(
                    "  rollups' cost: applied/s with them over without, per adjacent pair: "
                        + pairs.map { String(format: "%.2f", $0) }.joined(separator: ", ") + "; median \(String(format: "%.2f", ratio))×, "
                        + String(format: "%.3f ms", (1 / max(ratio, 0.001) - 1) * 1000 / max(off, 0.001))
                        + " more per notification at the rollup-free median \(Int(off))/s")
                report.fields += [("cost_ratio", .number(ratio)), ("applied_off", .number(off))]
            }
            await system.stop()
        } catch {
            await system.stop()
            throw error
        }
        return report
    }

    /// Generates the subscribers, sums their contributions and writes the sums as daily rollups.
    func load(today: Date) async throws -> (periods: Int, rows: Int, size: String, generation: Double, load: Double) {
        let started = ContinuousClock.now
        var generator = GeneratedSubscribers(today: today)
        var sums: [AnalyticsKey: Int64] = [:]
        var periods = 0
        for index in 0..<options.subscribers {
            let derivation = generator.subscriber(index)
            periods += derivation.periods.count
            for (key, value) in SubscriptionAnalytics.contribution(of: derivation, length: GeneratedSubscribers.length).values {
                sums[key, default: 0] += value
            }
        }
        let generation = (ContinuousClock.now - started).seconds
        let loadStarted = ContinuousClock.now
        let entries = sums.filter { $0.value != 0 }.map { ($0.key, $0.value) }
        let size = try await PostgresClient.withRunning(databaseURL.clientConfiguration(maximumConnections: 1), logger: logger) { client in
            for batch in stride(from: 0, to: entries.count, by: 20_000) {
                let slice = entries[batch..<min(batch + 20_000, entries.count)]
                try await client.query(
                    """
                    INSERT INTO analytics_daily (environment, measure, day, store, product, currency, value)
                    SELECT * FROM unnest(\(slice.map { $0.0.environment?.rawValue ?? "" })::text[], \(slice.map(\.0.measure.rawValue))::text[],
                                         \(slice.map(\.0.day.number))::integer[], \(slice.map(\.0.store.text))::text[],
                                         \(slice.map(\.0.product))::text[], \(slice.map(\.0.currency))::text[], \(slice.map(\.1))::bigint[])
                    """, logger: logger)
            }
            // A minute of differences at 1,000 applies a second: renewals' moved ends, over the last two days.
            if options.pending > 0 {
                try await client.query(
                    """
                    INSERT INTO analytics_deltas (day, measure, store, environment, product, currency, value)
                    SELECT \(AnalyticsDay(today).number) - (g % 2), (ARRAY['active_subscriptions', 'churned', 'mrr', 'transactions', 'revenue_gross'])[1 + g % 5],
                           CASE WHEN g % 4 = 0 THEN 'stripe' ELSE 'app_store' END, 'production',
                           (ARRAY['pro.monthly', 'basic.monthly', 'max.monthly', 'price_pro_monthly'])[1 + g % 4],
                           CASE WHEN g % 5 IN (2, 4) THEN 'USD' ELSE '' END, CASE WHEN g % 2 = 0 THEN 1 ELSE -1 END
                    FROM generate_series(1, \(options.pending)) AS g
                    """, logger: logger)
            }
            try await client.query("VACUUM ANALYZE analytics_daily", logger: logger)
            try await client.query("VACUUM ANALYZE analytics_deltas", logger: logger)
            let rows = try await client.query(
                "SELECT pg_size_pretty(pg_total_relation_size('analytics_daily') + pg_total_relation_size('analytics_deltas'))", logger: logger)
            for try await text in rows.decode(String.self) { return text }
            return ""
        }
        return (periods, entries.count, size, generation, (ContinuousClock.now - loadStarted).seconds)
    }

    /// Each request to `path` timed, with one to /healthz after each (milliseconds).
    func time(_ path: String, system: SystemUnderTest) async throws -> (chart: [Double], healthz: [Double]) {
        var chart: [Double] = []
        var healthz: [Double] = []
        let headers = [("Authorization", "Bearer \(Self.adminKey)")]
        _ = await system.request(path, headers: headers, timeout: 60)
        for _ in 0..<options.requests {
            let started = ContinuousClock.now
            let answer = await system.request(path, headers: headers, timeout: 60)
            guard answer.status == 200 else {
                throw CommandFailure("\(path) answered \(answer.status.map(String.init) ?? "nothing"): \(answer.body.prefix(200))")
            }
            chart.append((ContinuousClock.now - started).seconds * 1000)
            let reference = ContinuousClock.now
            _ = await system.request("/healthz")
            healthz.append((ContinuousClock.now - reference).seconds * 1000)
        }
        return (chart, healthz)
    }

    /// Applied/s of signed, priced first purchases with the rollups off and on, in turn, four times each.
    func cost(system: SystemUnderTest) async throws -> [(analytics: Bool, perSecond: Double)] {
        var rounds: [(Bool, Double)] = []
        for (round, analytics) in [false, true, false, true, false, true, false, true].enumerated() {
            let start = Date()
            let bodies = try (0..<options.notifications).map { index in
                try renewal(system: system, index: round * options.notifications + index, at: start.addingTimeInterval(Double(index) / 1000))
            }
            _ = try await system.send(bodies, clients: 32, rate: nil)
            let drainStarted = Date()
            var environment = system.environment
            environment["STOREKEEPER_ANALYTICS"] = analytics ? "true" : "false"
            let worker = try ChildProcess.spawn(system.executable, ["work"], environment: environment)
            defer {
                worker.signal(SIGTERM)
                _ = try? worker.wait()
            }
            rounds.append((analytics, try await system.waitUntilApplied(options.notifications, receivedSince: start, since: drainStarted)))
        }
        return rounds
    }

    /// A signed first purchase of a priced monthly subscription: what every apply's rollups see (a new customer, an
    /// active run, MRR, a transaction and its revenue).
    func renewal(system: SystemUnderTest, index: Int, at date: Date) throws -> ByteBuffer {
        let subscription = SimulatedEvent.Subscription(
            originalTransactionId: String(6_000_000_000_000 + index), productId: "pro.monthly", accountId: UUID(), bundleId: SystemUnderTest.bundleId)
        var event = SimulatedEvent.scenario(.subscribe, subscription: subscription, at: date)
        event.transaction?.price = 9990
        event.transaction?.currency = "USD"
        return ByteBuffer(data: try system.signer.requestBody(for: event))
    }
}
