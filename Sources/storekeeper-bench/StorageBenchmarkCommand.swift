import ArgumentParser
import Foundation
import Jobs
import LocalSigning
import Logging
import NIOCore
import Persistence
import PostgresNIO
import StorekeeperRuntime

struct StorageBenchmarkCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "storage",
        abstract: "Database growth per stored notification and per subscriber-year, against the signed payloads' size.",
        discussion: """
            Starts `serve` and `work` on a throwaway PostgreSQL and sends --subscribers subscriber-years: each a \
            SUBSCRIBED and 11 monthly DID_RENEW notifications, signed with a local Apple-shaped chain (three \
            certificates in every header, as Apple's), a month at a time: each month's notifications are applied before \
            the next month's are sent, as they would be. Each month, events and job history older than the month \
            before last are deleted with the product's retention statements (events are kept 30 days, job history 7: \
            this keeps more) and every table is vacuumed, as autovacuum does, so the year's growth is what a running \
            server keeps. Once all are applied \
            and the queue has drained it VACUUMs and \
            prints how much every table and its indexes grew, per notification and per subscriber-year, and the ratio \
            to the mean signed payload (the issue's target: ≤ 0.25×).
            """)

    @Option(help: "Subscribers, each with a year of notifications.") var subscribers = 500
    @Option(help: "Concurrent HTTP clients.") var clients = 16
    @Option(help: "A PostgreSQL server to create the benchmark database on (default: a private cluster).") var databaseURL: String?
    @Flag(help: "Print one JSON object on the last line.") var json = false

    func validate() throws {
        guard (1...100_000).contains(subscribers), (1...256).contains(clients) else {
            throw ValidationError("--subscribers must be 1...100000 and --clients 1...256")
        }
    }

    func run() async throws {
        let logger = commandLogger("storekeeper.bench")
        let report = try await BenchmarkDatabase.with(url: databaseURL, coldWAL: false, logger: logger) { url in
            try await measure(databaseURL: url, logger: logger)
        }
        report.print(json: json)
    }

    func measure(databaseURL: DatabaseURL, logger: Logger) async throws -> BenchmarkReport {
        let system = try SystemUnderTest(databaseURL: databaseURL, clients: clients, logger: logger)
        try system.migrate()
        let before = try await Self.relationSizes(databaseURL, logger: logger)
        let months = try subscriberYears(system)
        let bodies = months.flatMap { $0 }
        let runStarted = Date()
        do {
            try await system.startServe()
            try system.startWorker()
            var sentSoFar = 0
            var monthStarts: [Date] = []
            for month in months {
                monthStarts.append(Date())
                let sent = try await system.send(month, clients: clients, rate: nil)
                guard sent.failed == 0 else { throw CommandFailure("\(sent.failed) notifications were not accepted") }
                sentSoFar += month.count
                _ = try await system.waitUntilApplied(sentSoFar, receivedSince: runStarted)
                // A month on, what the month before last stored is past its retention (events 30 days, job history
                // 7): deleted with the product's own statements, then all tables vacuumed as autovacuum would, so later
                // months reuse the space, as a running server's tables do. A month late, so more is kept than in
                // production.
                if monthStarts.count >= 3 {
                    try await deleteRetained(before: monthStarts[monthStarts.count - 2], databaseURL: databaseURL, logger: logger)
                }
            }
            _ = try await system.eventually(60) { try await system.count("SELECT count(*) FROM jobs WHERE kind = 'apply-notification'") == 0 }
            await system.stop()
        } catch {
            await system.stop()
            throw error
        }
        let columns = try await PostgresClient.withRunning(databaseURL.clientConfiguration(maximumConnections: 1), logger: logger) { client in
            try await client.query("VACUUM", logger: logger)
            return try await Self.columnSizes(client, logger: logger)
        }
        let after = try await Self.relationSizes(databaseURL, logger: logger)
        let wrapper = #"{"signedPayload":""}"#.utf8.count
        let payloadBytes = Double(bodies.reduce(0) { $0 + $1.readableBytes - wrapper }) / Double(bodies.count)
        let growth = after.map { (name: $0.key, bytes: $0.value - (before[$0.key] ?? 0)) }.filter { $0.bytes > 0 }
            .sorted { $0.bytes > $1.bytes }
        let total = Double(growth.reduce(0) { $0 + $1.bytes })
        let perNotification = total / Double(bodies.count)
        let perSubscriberYear = total / Double(subscribers)
        // Events (30 days by default) and job history (7 days) are deleted after their retention (above, a month late);
        // the queue's own table is working space, reused. What stays for good is the rest.
        let transient: Set<String> = ["events", "webhook_deliveries", "webhook_attempts", "job_history", "jobs"]
        let kept = Double(growth.filter { !transient.contains($0.name) }.reduce(0) { $0 + $1.bytes }) / Double(bodies.count)
        var report = BenchmarkReport()
        report.lines = [
            "storage: \(subscribers) subscribers × 12 notifications (a subscriber-year: SUBSCRIBED + 11 DID_RENEW), applied by serve + work a month "
                + "at a time; events and job history deleted past their retention (a month late), then VACUUM",
            "  signed payload: \(Int(payloadBytes)) bytes per notification on average (base64url JWS, three certificates per header, nested JWS inside)",
            "  database growth: \(Int(perNotification)) bytes per notification = \(String(format: "%.3f", perNotification / payloadBytes))× the signed payload (target ≤ 0.25×); "
                + "\(String(format: "%.1f", perSubscriberYear / 1024)) KiB per subscriber-year",
            "  kept for good (all but events, job history and the queue's table, which are deleted or reused): \(Int(kept)) bytes per notification = "
                + "\(String(format: "%.3f", kept / payloadBytes))×; \(String(format: "%.1f", kept * 12 / 1024)) KiB per subscriber-year",
            "  against a real Apple notification (\(Self.appleNotificationBytes) bytes: Apple's certificates are larger than the local chain's, and "
                + "a header is stored once): \(String(format: "%.3f", perNotification / Double(Self.appleNotificationBytes)))× in all, "
                + "\(String(format: "%.3f", kept / Double(Self.appleNotificationBytes)))× kept",
            "  by table (with its indexes and TOAST), bytes per notification: "
                + growth.prefix(8).map { "\($0.name) \(Int(Double($0.bytes) / Double(bodies.count)))" }.joined(separator: ", "),
            "  stored values, mean bytes as stored (compressed): \(columns)",
        ]
        report.fields = [
            ("benchmark", .text("storage")), ("subscribers", .integer(subscribers)), ("notifications", .integer(bodies.count)),
            ("signedPayloadBytes", .integer(Int(payloadBytes))), ("bytesPerNotification", .integer(Int(perNotification))),
            ("ratio", .number(perNotification / payloadBytes)), ("bytesPerSubscriberYear", .integer(Int(perSubscriberYear))),
            ("keptBytesPerNotification", .integer(Int(kept))), ("keptRatio", .number(kept / payloadBytes)),
            ("ratioToAppleSize", .number(perNotification / Double(Self.appleNotificationBytes))),
        ]
        return report
    }

    /// Deletes the events and job history older than `cutoff`, as their hourly retention does, and vacuums, as
    /// autovacuum does (on the queue's hot table, far more often than monthly).
    func deleteRetained(before cutoff: Date, databaseURL: DatabaseURL, logger: Logger) async throws {
        try await PostgresClient.withRunning(databaseURL.clientConfiguration(maximumConnections: 2), logger: logger) { client in
            let log = EventLog(logger: logger)
            while try await client.withConnection({ try await log.deleteEvents(before: cutoff, limit: 10_000, on: $0) }) == 10_000 {}
            try await PostgresJobQueue(client: client, logger: logger).pruneHistory(
                olderThan: .seconds(Date().timeIntervalSince(cutoff)), limit: 1_000_000)
            try await client.query("VACUUM", logger: logger)
        }
    }

    /// The size of a real Apple notification with a transaction and a renewal info nested (the real sandbox sample 46
    /// in `../shared/fixtures/apple-real`).
    static let appleNotificationBytes = 18_366

    /// Each subscriber's year by month: every SUBSCRIBED, then every first renewal, and so on; the last period is
    /// still running at the end.
    func subscriberYears(_ system: SystemUnderTest) throws -> [[ByteBuffer]] {
        let period: TimeInterval = 30 * 86_400
        let start = Date().addingTimeInterval(-11.5 * period)
        let subscriptions = (0..<subscribers).map { index in
            SimulatedEvent.Subscription(
                originalTransactionId: String(4_000_000_000_000 + index), productId: "pro.monthly", accountId: UUID(),
                bundleId: SystemUnderTest.bundleId, period: period)
        }
        return try (0..<12).map { month in
            try subscriptions.enumerated().map { index, subscription in
                let periodStart = start.addingTimeInterval(Double(month) * period + Double(index) / 1000)
                let event =
                    month == 0
                    ? SimulatedEvent.scenario(.subscribe, subscription: subscription, at: periodStart)
                    : SimulatedEvent.scenario(
                        .renew, subscription: subscription,
                        currentPeriod: DateInterval(start: periodStart.addingTimeInterval(-period), duration: period),
                        at: periodStart.addingTimeInterval(-3600))
                return ByteBuffer(data: try system.signer.requestBody(for: event))
            }
        }
    }

    /// The mean stored size of the large values: a notification's signed parts and decoded facts, an event's body.
    static func columnSizes(_ client: PostgresClient, logger: Logger) async throws -> String {
        let rows = try await client.query(
            """
            SELECT (SELECT avg(pg_column_size(signed_parts))::int FROM notifications),
                (SELECT avg(pg_column_size(decoded))::int FROM notifications),
                (SELECT avg(coalesce(pg_column_size(body_deflated), pg_column_size(body)))::int FROM events),
                (SELECT (count(*)::float8 / greatest((SELECT count(*) FROM notifications), 1))::text FROM events)
            """, logger: logger)
        for try await (parts, decoded, body, events) in rows.decode((Int?, Int?, Int?, String).self) {
            return "signed parts \(parts.map(String.init) ?? "-"), decoded facts \(decoded.map(String.init) ?? "-"), "
                + "event body \(body.map(String.init) ?? "-") (\(events.prefix(4)) events per notification)"
        }
        return ""
    }

    /// Every table's size with its indexes and TOAST, by name.
    static func relationSizes(_ url: DatabaseURL, logger: Logger) async throws -> [String: Int] {
        try await PostgresClient.withRunning(url.clientConfiguration(maximumConnections: 1), logger: logger) { client in
            let rows = try await client.query(
                """
                SELECT c.relname, pg_total_relation_size(c.oid) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
                WHERE n.nspname = 'public' AND c.relkind = 'r'
                """, logger: logger)
            var sizes: [String: Int] = [:]
            for try await (name, bytes) in rows.decode((String, Int).self) { sizes[name] = bytes }
            return sizes
        }
    }
}
