import Foundation
import Jobs
import Logging
import PostgresNIO
import Subscriptions

/// Schedules late-renewal rechecks: one `renewal-recheck` job per (subscription, period), due
/// `delay` after the period's end — for every auto-renewing period applied, and after a DID_RENEW that did not move
/// the period. The job itself (App Store Server API) lives with the runtime.
public struct RenewalRechecks: Sendable {
    /// Job kind of a recheck.
    public static let jobKind = "renewal-recheck"

    /// Arguments of a recheck job.
    public struct Arguments: Codable, Sendable {
        public var originalTransactionId: String
        public var transactionId: String
        public var environment: String
    }

    let delay: TimeInterval
    let queue: PostgresJobQueue
    let logger: Logger

    public init(delay: TimeInterval, queue: PostgresJobQueue, logger: Logger) {
        self.delay = delay
        self.queue = queue
        self.logger = logger
    }

    /// Schedules what `state` calls for: a recheck after the period in force ends while it renews, and one right away
    /// when Apple reports access beyond that period (a renewal not seen yet).
    func schedule(for state: SubscriptionState, now: Date, on connection: PostgresConnection) async throws {
        guard state.status == .active, let end = state.expiresAt, state.willRenew || state.accessUntil != nil else { return }
        let due = state.accessUntil == nil ? end : max(end, now)
        let runAt = due.addingTimeInterval(delay)
        let inserted = try await connection.run(
            InsertRecheck(originalTransactionId: state.originalTransactionId, transactionId: state.latestTransactionId, dueAt: runAt),
            logger: logger)
        guard !inserted.isEmpty else { return }
        let job = try NewJob(
            kind: Self.jobKind,
            arguments: Arguments(originalTransactionId: state.originalTransactionId, transactionId: state.latestTransactionId, environment: state.environment),
            runAt: runAt, uniqueKey: "renewal-recheck:\(state.originalTransactionId):\(state.latestTransactionId)",
            concurrencyKey: "subscription:\(state.originalTransactionId)")
        _ = try await queue.enqueue(job, on: connection)
    }

    /// Records one check and Apple's status; returns how many checks there have been.
    public func recordCheck(_ arguments: Arguments, appleStatus: Int32?, resolved: Bool, on connection: PostgresConnection) async throws -> Int {
        let rows = try await connection.query(
            """
            UPDATE renewal_rechecks SET checks = checks + 1, last_status = \(appleStatus.map(Int.init)), last_checked_at = now(),
                resolved_at = CASE WHEN \(resolved) THEN now() ELSE resolved_at END
            WHERE original_transaction_id = \(arguments.originalTransactionId) AND transaction_id = \(arguments.transactionId)
            RETURNING checks
            """,
            logger: logger)
        for try await checks in rows.decode(Int.self) { return checks }
        return 0
    }

    /// Records that a period is to be rechecked, unless it is already; a row comes back when it was recorded.
    struct InsertRecheck: PostgresPreparedStatement {
        static let sql = """
            INSERT INTO renewal_rechecks (original_transaction_id, transaction_id, due_at) VALUES ($1, $2, $3)
            ON CONFLICT (original_transaction_id, transaction_id) DO NOTHING RETURNING due_at
            """
        static let bindingDataTypes: [PostgresDataType] = [.text, .text, .timestamptz]
        var originalTransactionId: String
        var transactionId: String
        var dueAt: Date

        func makeBindings() -> PostgresBindings {
            var bindings = PostgresBindings(capacity: 3)
            bindings.append(originalTransactionId)
            bindings.append(transactionId)
            bindings.append(dueAt)
            return bindings
        }

        func decodeRow(_ row: PostgresRow) throws -> Date { try row.decode(Date.self) }
    }
}
