import AppStoreModels
import Foundation
import Jobs
import Logging
import Persistence
import PostgresNIO
import Subscriptions

/// Schedules late-renewal rechecks: one `renewal-recheck` job per (subscription, period), due `delay` after the
/// period's end while it renews, and at once when Apple reports access beyond the period (a renewal not seen yet).
/// ``RenewalRecheckJob`` asks the App Store Server API.
public struct RenewalRechecks: Sendable {
    /// Job kind of a recheck.
    public static let jobKind = "renewal-recheck"

    /// Arguments of a recheck job.
    public struct Arguments: Codable, Sendable {
        public var originalTransactionId: String
        public var transactionId: String
        public var environment: AppStoreEnvironment
    }

    let delay: TimeInterval
    let queue: any JobScheduling
    let records: RenewalRecheckRecords
    let logger: Logger

    public init(delay: TimeInterval, queue: any JobScheduling, logger: Logger) {
        self.delay = delay
        self.queue = queue
        self.records = RenewalRecheckRecords(logger: logger)
        self.logger = logger
    }

    /// Schedules what `state` calls for: a recheck after the period in force ends while it renews, and one right away
    /// when Apple reports access beyond that period (a renewal not seen yet).
    func schedule(for state: SubscriptionState, now: Date, on connection: PostgresConnection) async throws {
        guard state.status == .active, let end = state.expiresAt, state.willRenew || state.accessUntil != nil else { return }
        let due = state.accessUntil == nil ? end : max(end, now)
        let runAt = due.addingTimeInterval(delay)
        guard try await records.record(state.originalTransactionId, transactionId: state.latestTransactionId, dueAt: runAt, on: connection)
        else { return }
        let job = try NewJob(
            kind: Self.jobKind,
            arguments: Arguments(
                originalTransactionId: state.originalTransactionId, transactionId: state.latestTransactionId, environment: state.environment),
            runAt: runAt, uniqueKey: "renewal-recheck:\(state.originalTransactionId):\(state.latestTransactionId)",
            concurrencyKey: "subscription:\(state.originalTransactionId)")
        try await queue.enqueue(job, on: connection)
    }
}
