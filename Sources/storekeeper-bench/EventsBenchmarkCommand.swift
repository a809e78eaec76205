import ArgumentParser
import Events
import Foundation
import HTTPTypes
import Hummingbird
import Logging
import NIOCore
import StorekeeperRuntime
import Synchronization

struct EventsBenchmarkCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "events",
        abstract: "Webhook delivery: events/s to a local receiver, and what a webhook endpoint adds to applying a notification.",
        discussion: """
            Runs `serve` + `work` twice on throwaway PostgreSQL clusters with the same --notifications distinct \
            subscriptions (each stores subscription.started and credits.granted): first with no webhook endpoint (the \
            reference: events are stored, nothing is sent), then with one endpoint, a receiver in this process that \
            checks every Standard Webhooks signature. Prints applied/s of both runs, the added time per applied \
            notification and their ratio, and events/s delivered (first to last delivery at the receiver). With \
            --endpoint-delay-ms the receiver answers each webhook that much later, as an app's endpoint that works \
            before it answers, so that deliveries wait on the network as they do for a slow app (what \
            STOREKEEPER_WORKER_CONCURRENCY does to them).
            """)

    @Option(help: "Notifications (one new subscription each).") var notifications = 3000
    @Option(help: "Concurrent HTTP clients posting them.") var clients = 16
    @Option(help: "How long the receiver takes to answer each webhook, in milliseconds (a slow app's endpoint).")
    var endpointDelayMs = 0
    @Flag(help: "Print one JSON object on the last line.") var json = false

    func validate() throws {
        guard notifications > 0, clients > 0 else { throw ValidationError("--notifications and --clients must be positive") }
        // Under the delivery's 10 s request timeout, so a slow endpoint is measured, not a failing one.
        guard (0...5_000).contains(endpointDelayMs) else { throw ValidationError("--endpoint-delay-ms must be 0 to 5000") }
    }

    func run() async throws {
        let logger = commandLogger("storekeeper.bench")
        let reference = try await BenchmarkDatabase.with(url: nil, logger: logger) { url in
            try await apply(databaseURL: url, endpoint: nil, logger: logger)
        }
        let receiver = BenchmarkReceiver(delay: .milliseconds(endpointDelayMs))
        let hooked = try await receiver.running(logger: logger) { port in
            try await BenchmarkDatabase.with(url: nil, logger: logger) { url in
                try await apply(databaseURL: url, endpoint: (port, receiver.secret), receiver: receiver, logger: logger)
            }
        }
        report(reference: reference, hooked: hooked, receiver: receiver).print(json: json)
    }

    struct Run: Sendable {
        var appliedPerSecond: Double
        var events: Int
        var deliveredPerSecond: Double?
        var lastDeliveryAfterLastApply: Double?
    }

    /// Posts the notifications to a fresh `serve` + `work` and waits until all are applied (and, with an endpoint, all
    /// events delivered).
    func apply(
        databaseURL: DatabaseURL, endpoint: (port: Int, secret: WebhookSignature.Secret)?, receiver: BenchmarkReceiver? = nil,
        logger: Logger
    ) async throws -> Run {
        var environment: [String: String] = [:]
        if let endpoint {
            environment["STOREKEEPER_WEBHOOKS"] = """
                {"endpoints": [{"name": "bench", "url": "http://127.0.0.1:\(endpoint.port)/hook", "secrets": ["\(endpoint.secret.encoded)"]}]}
                """
        }
        let system = try SystemUnderTest(databaseURL: databaseURL, clients: clients, environment: environment, logger: logger)
        try system.migrate()
        let started = Date()
        let bodies = try (0..<notifications).map { try system.subscribe($0, at: started.addingTimeInterval(Double($0) / 1000)).body }
        do {
            try await system.startServe()
            _ = try system.startWorker()
            let sent = try await system.send(bodies, clients: clients, rate: nil)
            guard sent.failed == 0 else { throw CommandFailure("\(sent.failed) notifications were not accepted") }
            let applied = try await system.waitUntilApplied(notifications, receivedSince: started)
            let events = try await system.count("SELECT count(*) FROM events")
            var run = Run(appliedPerSecond: applied, events: events)
            if let receiver {
                guard try await system.eventually(600, { receiver.distinct >= events }) else {
                    throw CommandFailure("only \(receiver.distinct) of \(events) events were delivered within 600 s")
                }
                let lastApplied = try await system.text("SELECT extract(epoch FROM max(applied_at))::text FROM notifications")
                run.deliveredPerSecond = receiver.perSecond
                run.lastDeliveryAfterLastApply = receiver.last.map { $0.timeIntervalSince1970 - (Double(lastApplied) ?? 0) }
            }
            await system.stop()
            return run
        } catch {
            await system.stop()
            throw error
        }
    }

    func report(reference: Run, hooked: Run, receiver: BenchmarkReceiver) -> BenchmarkReport {
        let addedMs = (1 / max(hooked.appliedPerSecond, 0.001) - 1 / max(reference.appliedPerSecond, 0.001)) * 1000
        let ratio = hooked.appliedPerSecond / max(reference.appliedPerSecond, 0.001)
        let delivered = hooked.deliveredPerSecond ?? 0
        var report = BenchmarkReport()
        report.lines = [
            "events: \(notifications) new subscriptions from \(clients) clients to serve + work, twice, private clusters",
            "  reference, no endpoint: \(Int(reference.appliedPerSecond)) notifications/s applied, \(reference.events) events stored",
            "  one webhook endpoint:   \(Int(hooked.appliedPerSecond)) notifications/s applied (\(String(format: "%.2f", ratio))× the reference; "
                + "\(String(format: "%+.3f", addedMs)) ms per applied notification)",
            "  delivered: \(hooked.events) events, \(Int(delivered)) events/s to the receiver answering in \(endpointDelayMs) ms "
                + "(signatures checked, \(receiver.refused) refused, "
                + "\(receiver.received - receiver.distinct) duplicates); last one \(String(format: "%.2f", hooked.lastDeliveryAfterLastApply ?? 0)) s after the last apply",
            "  delivered/s ÷ reference applied/s: \(String(format: "%.2f", delivered / max(reference.appliedPerSecond, 0.001)))",
        ]
        report.fields = [
            ("benchmark", .text("events")), ("notifications", .integer(notifications)),
            ("referenceAppliedPerSecond", .integer(Int(reference.appliedPerSecond))), ("appliedPerSecond", .integer(Int(hooked.appliedPerSecond))),
            ("appliedRatio", .number(ratio)), ("addedMsPerNotification", .number(addedMs)), ("events", .integer(hooked.events)),
            ("deliveredPerSecond", .integer(Int(delivered))), ("refused", .integer(receiver.refused)),
            ("endpointDelayMs", .integer(endpointDelayMs)),
        ]
        return report
    }
}

/// The app's service in the benchmark: verifies each webhook's signature as docs/events.md shows and counts what
/// arrived, first to last.
final class BenchmarkReceiver: Sendable {
    let secret = WebhookSignature.Secret.generate()
    /// How long each answer takes: an app's endpoint that does its work before it answers.
    let delay: Duration
    private struct Tally {
        var ids: Set<String> = []
        var received = 0
        var refused = 0
        var first: Date?
        var last: Date?
    }
    private let tally = Mutex(Tally())

    init(delay: Duration = .zero) { self.delay = delay }

    var distinct: Int { tally.withLock { $0.ids.count } }
    var received: Int { tally.withLock { $0.received } }
    var refused: Int { tally.withLock { $0.refused } }
    var last: Date? { tally.withLock { $0.last } }
    var perSecond: Double {
        tally.withLock { tally in
            guard let first = tally.first, let last = tally.last, last > first else { return 0 }
            return Double(tally.ids.count) / last.timeIntervalSince(first)
        }
    }

    /// Runs the receiver on a free local port for the duration of `body`.
    func running<Result: Sendable>(logger: Logger, _ body: (Int) async throws -> Result) async throws -> Result {
        let router = Router()
        router.post("/hook") { request, _ -> HTTPResponse.Status in
            let bytes = Data(buffer: try await request.body.collect(upTo: 1 << 20))
            let verified = request.headers[HTTPField.Name("webhook-id")!].flatMap { id in
                request.headers[HTTPField.Name("webhook-timestamp")!].flatMap(Int64.init).flatMap { timestamp in
                    request.headers[HTTPField.Name("webhook-signature")!].map { signature in
                        (id, WebhookSignature(secrets: [self.secret]).verify(header: signature, id: id, timestamp: timestamp, body: bytes))
                    }
                }
            }
            if self.delay > .zero { try await Task.sleep(for: self.delay) }
            let now = Date()
            return self.tally.withLock { tally in
                guard let (id, valid) = verified, valid else {
                    tally.refused += 1
                    return .unauthorized
                }
                tally.received += 1
                tally.ids.insert(id)
                if tally.first == nil { tally.first = now }
                tally.last = now
                return .noContent
            }
        }
        let port = try PrivateCluster.freePort()
        var quiet = logger
        quiet.logLevel = .critical
        let application = Application(
            router: router, configuration: .init(address: .hostname("127.0.0.1", port: port)), logger: quiet)
        return try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await application.runService(gracefulShutdownSignals: []) }
            defer { group.cancelAll() }
            return try await body(port)
        }
    }
}
