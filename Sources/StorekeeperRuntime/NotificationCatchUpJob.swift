import AppStoreModels
import AppStoreServerAPI
import Foundation
import Jobs
import Logging
import Persistence

/// The periodic catch-up of missed notifications: for every accepted environment, reads Notification History with
/// `onlyFailures` from the stored checkpoint (a few minutes of overlap; at most Apple's retention) to now through
/// ``NotificationHistoryBackfill``, then advances the checkpoint.
public struct NotificationCatchUpJob: JobHandler {
    public static let jobKind = "notification-catch-up"
    public let kind = Self.jobKind
    private let backfill: NotificationHistoryBackfill
    private let checkpoints: NotificationHistoryCheckpoints
    private let environments: [AppStoreEnvironment]
    private let clock: @Sendable () -> Date

    /// Read again before the checkpoint, for notifications Apple recorded late.
    static let overlap: TimeInterval = 10 * 60
    /// How far back the first catch-up reads.
    static let firstWindow: TimeInterval = 86_400

    public init(
        backfill: NotificationHistoryBackfill, checkpoints: NotificationHistoryCheckpoints,
        environments: [AppStoreEnvironment], clock: @escaping @Sendable () -> Date
    ) {
        self.backfill = backfill
        self.checkpoints = checkpoints
        self.environments = environments
        self.clock = clock
    }

    /// The schedule that enqueues it.
    public static func schedule(every interval: TimeInterval) -> PeriodicSchedule {
        PeriodicSchedule(name: jobKind, kind: jobKind, every: interval, maximumCatchUp: 1) { _ in [String: String]() }
    }

    public func run(_ execution: JobExecution) async throws {
        let now = clock()
        for environment in environments {
            let oldest = now.addingTimeInterval(-NotificationHistoryBackfill.retention(of: environment) + 3600)
            let checkpoint = try await checkpoints.readUntil(environment: environment) ?? now.addingTimeInterval(-Self.firstWindow)
            let start = max(checkpoint.addingTimeInterval(-Self.overlap), oldest)
            _ = try await backfill.run(NotificationHistoryQuery(startDate: start, endDate: now, onlyFailures: true, environment: environment))
            try await checkpoints.advance(environment: environment, to: now)
        }
    }
}
