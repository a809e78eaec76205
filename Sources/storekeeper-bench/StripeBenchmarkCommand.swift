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

    @OptionGroup var options: StoreIntakeOptions

    func run() async throws {
        let logger = commandLogger("storekeeper.bench")
        let report = try await BenchmarkDatabase.with(url: nil, coldWAL: false, logger: logger) { url in
            try await StripeBenchmarkRun(options: options, databaseURL: url, logger: logger).run()
        }
        report.print(json: options.json)
    }
}

/// One run: fake Stripe and processes up, checkouts, burst, drain, renewals at a steady rate, processes down.
struct StripeBenchmarkRun {
    let options: StoreIntakeOptions
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
            let processed = try await waitUntilProcessed(
                burstEvents.count, in: .stripeEvents, since: started, databaseURL: databaseURL, logger: logger)
            let steady = try await system.send(
                requests: requests(renewalEvents, fake: fake, port: system.port), clients: options.clients, rate: options.rate)
            _ = try await waitUntilProcessed(
                burstEvents.count + renewalEvents.count, in: .stripeEvents, since: started, databaseURL: databaseURL, logger: logger)
            let reads = fake.state.withLock { $0.requests.count }
            let memory = system.peakResidentBytes
            await system.stop()
            let tpcb = try BenchmarkDatabase.pgbench([], clients: options.clients, seconds: 5, url: databaseURL)
            return StoreIntakeMeasurement(
                benchmark: "stripe",
                headline:
                    "stripe: \(burst.sent) events of \(options.subscriptions) checkouts from \(options.clients) clients to serve + work, a fake Stripe beside them (private cluster, WAL warmed)",
                unit: "events", reads: "Stripe API reads", options: options, burst: burst, processed: processed, steady: steady,
                readsPerMessage: Double(reads) / Double(burstEvents.count + renewalEvents.count), tpcb: tpcb.tps,
                residentBytes: memory.serve + memory.work
            ).report
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
}
