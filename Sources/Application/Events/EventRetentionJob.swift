import Foundation
import Jobs
import Logging
import Persistence
import PostgresNIO

/// Deletes events older than the retention period (`STOREKEEPER_EVENT_RETENTION_DAYS`), with their deliveries and
/// delivery logs; hourly.
public struct EventRetentionJob: JobHandler {
    public static let jobKind = "event-retention"
    public let kind = Self.jobKind
    private let client: PostgresClient
    private let retention: TimeInterval
    private let log: EventLog
    private let clock: @Sendable () -> Date
    private let logger: Logger

    public init(client: PostgresClient, retention: TimeInterval, clock: @escaping @Sendable () -> Date, logger: Logger) {
        self.client = client
        self.retention = retention
        self.log = EventLog(logger: logger)
        self.clock = clock
        self.logger = logger
    }

    public static func schedule(every interval: TimeInterval = 3600) -> PeriodicSchedule {
        PeriodicSchedule(name: jobKind, kind: jobKind, every: interval, maximumCatchUp: 1) { _ in [String: String]() }
    }

    public func run(_ execution: JobExecution) async throws {
        let cutoff = clock().addingTimeInterval(-retention)
        let deleted = try await client.withConnection { try await log.deleteEvents(before: cutoff, on: $0) }
        if deleted > 0 { logger.info("old events deleted", metadata: ["events.deleted": "\(deleted)"]) }
    }
}
