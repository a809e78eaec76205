import ArgumentParser
import Foundation
import Hummingbird
import Logging
import NIOCore
import PostgresNIO
import StorekeeperRuntime
import StripeFake
import StripeStore

/// `storekeeper-bench stripe`: Stripe's webhooks end to end — signed events POSTed to `serve`, processed by `work`,
/// which reads every object again from a fake Stripe beside it — against pgbench TPC-B of the same cluster.
struct StripeBenchmarkCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "stripe",
        abstract: "Stripe events POSTed to `serve` + `work` processes that read a fake Stripe, until every one is processed.",
        discussion: """
            Starts a fake Stripe in this process and `storekeeper serve` and `work` as processes on a private PostgreSQL, \
            has --subscriptions customers check out (3 events each: subscription created, invoice paid, session \
            completed), POSTs every event signed from --clients connections as fast as answered (intake/s, latency), \
            waits until all are processed (events/s, with the worker's Stripe reads), then renews every subscription \
            and sends those events open-loop at --rate per second (latency at that rate). The reference is pgbench \
            TPC-B on the same cluster at scale --clients (a scale-1 run measures one row lock).
            """)

    @Option(help: "Customers who check out.") var subscriptions = 2000
    @Option(help: "Concurrent HTTP clients.") var clients = 32
    @Option(help: "Events per second of the steady phase (open loop).") var rate = 200
    @Flag(help: "Print one JSON object on the last line.") var json = false

    func validate() throws {
        guard subscriptions > 0, clients > 0, rate > 0 else { throw ValidationError("--subscriptions, --clients and --rate must be positive") }
    }

    func run() async throws {
        let logger = commandLogger("storekeeper.bench")
        let report = try await BenchmarkDatabase.with(url: nil, coldWAL: false, logger: logger) { url in
            try await StripeBenchmarkRun(options: self, databaseURL: url, logger: logger).run()
        }
        report.print(json: json)
    }
}

/// One run: fake Stripe and processes up, checkouts, burst, drain, renewals at a steady rate, processes down.
struct StripeBenchmarkRun {
    let options: StripeBenchmarkCommand
    let databaseURL: DatabaseURL
    let logger: Logger

    func run() async throws -> BenchmarkReport {
        let price = StripePrice(id: "price_pro_monthly", unitAmount: 999, currency: "usd", recurring: .init(interval: "month"))
        let fake = FakeStripe(prices: [price])
        let fakePort = try PrivateCluster.freePort()
        let application = Application(
            router: fake.router(), configuration: .init(address: .hostname("127.0.0.1", port: fakePort)), logger: Logger(label: "fake-stripe"))
        let fakeServer = Task { try await application.runService() }
        defer { fakeServer.cancel() }
        let system = try SystemUnderTest(
            databaseURL: databaseURL, clients: options.clients,
            environment: [
                "STOREKEEPER_STRIPE_WEBHOOK_SECRETS": fake.webhookSecret, "STOREKEEPER_STRIPE_API_KEY": fake.apiKey,
                "STOREKEEPER_STRIPE_BASE_URL": "http://127.0.0.1:\(fakePort)",
                // Storekeeper's own limit measured, not Stripe's allowance (docs/capacity.md has both).
                "STOREKEEPER_STRIPE_REQUESTS_PER_SECOND": "100000",
            ], logger: logger)
        try system.migrate()
        let now = Int64(Date().timeIntervalSince1970)
        var ids: [String] = []
        for _ in 0..<options.subscriptions {
            let session = try fake.createSession(priceId: price.id, mode: "subscription", account: UUID().uuidString.lowercased())
            ids.append(try fake.completeCheckout(session, at: now).subscription ?? "")
        }
        let burstEvents = fake.events
        for id in ids { try fake.renew(id) }
        let renewalEvents = Array(fake.events.dropFirst(burstEvents.count))
        do {
            try await system.startServe()
            try system.startWorker()
            let started = Date()
            let burst = try await system.send(requests: requests(burstEvents, fake: fake, port: system.port), clients: options.clients, rate: nil)
            let processed = try await waitUntilProcessed(burstEvents.count, since: started)
            let steady = try await system.send(
                requests: requests(renewalEvents, fake: fake, port: system.port), clients: options.clients, rate: options.rate)
            _ = try await waitUntilProcessed(burstEvents.count + renewalEvents.count, since: started)
            let reads = fake.state.withLock { $0.requests.count }
            let memory = system.peakResidentBytes
            await system.stop()
            let tpcb = try BenchmarkDatabase.pgbench([], clients: options.clients, seconds: 5, url: databaseURL)
            return report(
                burst: burst, processed: processed, steady: steady, readsPerEvent: Double(reads) / Double(burstEvents.count + renewalEvents.count), tpcb: tpcb.tps, rss: memory.serve + memory.work)
        } catch {
            await system.stop()
            throw error
        }
    }

    /// Each event as Stripe posts it: its own `Stripe-Signature`, signed now.
    func requests(_ events: [FakeStripe.Event], fake: FakeStripe, port: Int) -> [ByteBuffer] {
        let now = Int64(Date().timeIntervalSince1970)
        return events.map { event in
            var request = ByteBuffer()
            request.writeString(
                "POST /stripe/webhooks HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nContent-Type: application/json\r\n"
                    + "Stripe-Signature: \(fake.signature(of: event.body, at: now))\r\nContent-Length: \(event.body.count)\r\n\r\n")
            request.writeBytes(event.body)
            return request
        }
    }

    /// Waits until `count` events are processed; the rate from the database's own times (first received to last
    /// processed).
    func waitUntilProcessed(_ count: Int, since: Date) async throws -> Double {
        try await PostgresClient.withRunning(databaseURL.clientConfiguration(maximumConnections: 1), logger: logger) { client in
            let deadline = ContinuousClock.now + .seconds(600)
            while ContinuousClock.now < deadline {
                let rows = try await client.query(
                    """
                    SELECT count(*) FILTER (WHERE processed_at IS NOT NULL)::bigint, count(*)::bigint,
                        coalesce(extract(epoch FROM max(processed_at) - min(received_at)), 0)::float8
                    FROM stripe_events WHERE received_at >= \(since)
                    """, logger: logger)
                for try await (processed, total, seconds) in rows.decode((Int64, Int64, Double).self) where processed >= count && processed == total {
                    return seconds > 0 ? Double(processed) / seconds : 0
                }
                try await Task.sleep(for: .milliseconds(200))
            }
            throw CommandFailure("Stripe events were not all processed within 600 s")
        }
    }

    func report(
        burst: SystemUnderTest.SendPhase, processed: Double, steady: SystemUnderTest.SendPhase, readsPerEvent: Double, tpcb: Double, rss: Int
    ) -> BenchmarkReport {
        let intake = Double(burst.accepted) / max(burst.seconds, 0.001)
        let format = { (value: Double) in String(format: "%.2f", value) }
        var report = BenchmarkReport()
        report.lines = [
            "stripe: \(burst.sent) events of \(options.subscriptions) checkouts from \(options.clients) clients to serve + work, a fake Stripe beside them (private cluster, WAL warmed)",
            "  intake:    \(Int(intake)) events/s (\(burst.accepted) accepted, \(burst.failed) failed); latency p50 \(format(burst.percentile(0.5))) ms, p99 \(format(burst.percentile(0.99))) ms",
            "  processed: \(Int(processed)) events/s while the intake ran (first received to last processed), \(format(readsPerEvent)) Stripe API reads per event",
            "  steady \(options.rate)/s (open loop, \(steady.sent) renewal events): \(steady.accepted) accepted, \(steady.failed) failed; "
                + "latency p50 \(format(steady.percentile(0.5))) ms, p99 \(format(steady.percentile(0.99))) ms",
            "  reference: pgbench TPC-B (durable, \(options.clients) clients, scale \(options.clients)) \(Int(tpcb)) tps on the same cluster; "
                + "intake \(format(intake / max(tpcb, 0.001)))×, processed \(format(processed / max(tpcb, 0.001)))×",
            "  peak resident: serve + work \(format(Double(rss) / 1_048_576)) MB",
        ]
        report.fields = [
            ("benchmark", .text("stripe")), ("events", .integer(burst.sent)), ("clients", .integer(options.clients)),
            ("intakePerSecond", .integer(Int(intake))), ("intakeP50Ms", .number(burst.percentile(0.5))), ("intakeP99Ms", .number(burst.percentile(0.99))),
            ("processedPerSecond", .integer(Int(processed))), ("readsPerEvent", .number(readsPerEvent)), ("steadyRate", .integer(options.rate)),
            ("steadyP50Ms", .number(steady.percentile(0.5))), ("steadyP99Ms", .number(steady.percentile(0.99))),
            ("failed", .integer(burst.failed + steady.failed)), ("pgbenchTPCB", .integer(Int(tpcb))),
            ("intakeRatio", .number(intake / max(tpcb, 0.001))), ("processedRatio", .number(processed / max(tpcb, 0.001))),
        ]
        return report
    }
}
