import Foundation
import Jobs
import Logging
import Persistence
import PostgresNIO

/// Folds the analytics differences the workers appended into the daily sums, every minute, so a chart reads a
/// minute's worth of differences at most beside the sums.
public struct AnalyticsCompactionJob: JobHandler {
    public static let jobKind = "analytics-compact"
    public let kind = Self.jobKind
    /// Folding sums changes no account's status.
    public let changesAccountStatus = false
    private let client: PostgresClient
    private let rollups: AnalyticsRollups
    private let logger: Logger

    public init(client: PostgresClient, logger: Logger) {
        self.client = client
        self.rollups = AnalyticsRollups(logger: logger)
        self.logger = logger
    }

    public func run(_ execution: JobExecution) async throws {
        let folded = try await client.withTransaction(logger: logger) { try await rollups.compact(on: $0) }
        if folded > 0 { logger.debug("analytics differences folded", metadata: ["analytics.folded": "\(folded)"]) }
    }

    /// Every minute; a missed minute is made up by the next run, which folds everything.
    public static var schedule: PeriodicSchedule {
        PeriodicSchedule(name: jobKind, kind: jobKind, every: 60, maximumCatchUp: 1) { _ in [String: String]() }
    }
}
