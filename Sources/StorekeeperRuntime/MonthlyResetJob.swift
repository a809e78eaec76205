import Foundation
import Jobs
import Logging
import Persistence
import PostgresNIO

/// The monthly reset of an annual plan's cycle credits, scheduled at each anniversary boundary: grants month `k` of
/// the period (one ledger key per transaction and month) and schedules month `k + 1`. A late or lost job is harmless —
/// reads apply the month's grant lazily — and a period replaced since (renewal, upgrade, refund) ends the chain.
public struct MonthlyResetJob: JobHandler {
    public let kind = CreditLedger.monthlyResetJobKind
    /// Database work only: an attempt stuck on a connection the database dropped is given up quickly.
    public let timeout: Duration = .seconds(30)
    private let client: PostgresClient
    private let subscriptions: SubscriptionStore
    private let credits: CreditLedger
    private let queue: PostgresJobQueue
    private let clock: @Sendable () -> Date
    private let logger: Logger

    public init(client: PostgresClient, queue: PostgresJobQueue, credits: CreditLedger, clock: @escaping @Sendable () -> Date, logger: Logger) {
        self.client = client
        self.subscriptions = SubscriptionStore(client: client, logger: logger)
        self.credits = credits
        self.queue = queue
        self.clock = clock
        self.logger = logger
    }

    public func run(_ execution: JobExecution) async throws {
        let reset = try execution.job.decodeArguments(as: CreditLedger.MonthlyReset.self)
        try await client.withTransaction(logger: logger) { connection in
            let state = try await subscriptions.lockedSubscription(reset.originalTransactionId, on: connection)
            if let state, state.latestTransactionId == reset.transactionId, state.status.isRunning,
                let window = try await credits.grantMonth(reset.month, of: state, on: connection),
                reset.month < 11, let end = state.expiresAt, window.end < end
            {
                var next = reset
                next.month += 1
                _ = try await queue.enqueue(
                    try NewJob(kind: kind, arguments: next, runAt: window.end, uniqueKey: "credit-reset:\(reset.transactionId):m\(next.month)"),
                    on: connection)
            }
            try await execution.complete(on: connection)
        }
    }
}
