import Foundation
import Jobs
import Logging
import Persistence
import PostgresNIO

/// Deletes what has outlived its retention period, hourly: ``events(client:retention:clock:logger:)``,
/// ``signedPayloads(client:retention:clock:logger:)`` and ``idempotencyWindow(client:window:clock:logger:)``.
public struct RetentionJob: JobHandler {
    public let kind: String
    /// Deleting old events, signed bytes, usage answers or ended holds changes no status.
    public let changesAccountStatus = false
    private let retention: TimeInterval
    private let clock: @Sendable () -> Date
    /// Deletes what is older than the cutoff; returns how many rows went.
    private let purge: @Sendable (_ cutoff: Date) async throws -> Int
    private let done: Logger.Message
    private let logger: Logger

    public func run(_ execution: JobExecution) async throws {
        let purged = try await purge(clock().addingTimeInterval(-retention))
        if purged > 0 { logger.info(done, metadata: ["retention.purged": "\(purged)", "job.kind": "\(kind)"]) }
    }

    /// Its hourly schedule.
    public var schedule: PeriodicSchedule {
        PeriodicSchedule(name: kind, kind: kind, every: 3600, maximumCatchUp: 1) { _ in [String: String]() }
    }

    public static let eventsKind = "event-retention"
    public static let signedPayloadsKind = "signed-payload-retention"
    public static let idempotencyWindowKind = "idempotency-window"
    /// Every kind of retention job.
    public static let kinds = [eventsKind, signedPayloadsKind, idempotencyWindowKind]

    /// Deletes events older than `retention` (`STOREKEEPER_EVENT_RETENTION_DAYS`), with their deliveries and logs, a
    /// thousand per statement.
    public static func events(
        client: PostgresClient, retention: TimeInterval, clock: @escaping @Sendable () -> Date, logger: Logger
    ) -> RetentionJob {
        let log = EventLog(logger: logger)
        return RetentionJob(
            kind: eventsKind, retention: retention, clock: clock,
            purge: { cutoff in
                try await inBatches { limit in
                    try await client.withFencedConnection { try await log.deleteEvents(before: cutoff, limit: limit, on: $0) }
                }
            },
            done: "old events deleted", logger: logger)
    }

    /// Clears the signed payloads of notifications older than `retention` (`STOREKEEPER_SIGNED_RETENTION_DAYS`), a
    /// thousand per transaction. Replay, status and credits read the verified facts, which stay; what goes is the
    /// ability to verify Apple's signature again.
    public static func signedPayloads(
        client: PostgresClient, retention: TimeInterval, clock: @escaping @Sendable () -> Date, logger: Logger
    ) -> RetentionJob {
        let archive = SignedPayloadArchive(logger: logger)
        return RetentionJob(
            kind: signedPayloadsKind, retention: retention, clock: clock,
            purge: { cutoff in
                try await inBatches { limit in
                    try await client.withFencedTransaction(logger: logger) {
                        try await archive.clearSignedPayloads(receivedBefore: cutoff, limit: limit, on: $0)
                    }
                }
            },
            done: "old signed payloads cleared", logger: logger)
    }

    /// Deletes usage answers and ended holds older than `window` (`STOREKEEPER_IDEMPOTENCY_WINDOW_DAYS`), a thousand
    /// per transaction: after it a key may be used again, for a new spend or hold. Credits are untouched: balances and
    /// the ledger do not read either.
    public static func idempotencyWindow(
        client: PostgresClient, window: TimeInterval, clock: @escaping @Sendable () -> Date, logger: Logger
    ) -> RetentionJob {
        let answers = UsageRequests(logger: logger)
        let holds = CreditHoldStore(logger: logger)
        return RetentionJob(
            kind: idempotencyWindowKind, retention: window, clock: clock,
            purge: { cutoff in
                let deletedAnswers = try await inBatches { limit in
                    try await client.withFencedConnection { try await answers.deleteAnswers(before: cutoff, limit: limit, on: $0) }
                }
                let deletedHolds = try await inBatches { limit in
                    try await client.withFencedConnection { try await holds.deleteEndedHolds(before: cutoff, limit: limit, on: $0) }
                }
                return deletedAnswers + deletedHolds
            },
            done: "usage answers and holds past the idempotency window deleted", logger: logger)
    }

    /// Runs `batch` with a limit of a thousand until one does less or `budget` has passed; returns the sum. A backlog
    /// (the first run after an upgrade, a window shortened) is worked off over the next hourly runs, each well inside
    /// the job's timeout, instead of loading a live install for as long as it takes.
    private static func inBatches(budget: Duration = .seconds(120), _ batch: (_ limit: Int) async throws -> Int) async throws -> Int {
        let clock = ContinuousClock()
        let deadline = clock.now.advanced(by: budget)
        var total = 0
        while true {
            let done = try await batch(1000)
            total += done
            if done < 1000 || clock.now >= deadline { return total }
        }
    }
}
