import Foundation
import Logging
import PostgresNIO
import StatementFencing
import Subscriptions

/// The archive of ended subscriptions: one row per (subscription, transaction, reason), marked reinstated when a
/// refund is reversed. It is a projection of the derived ends (``Lifecycle/End``), so deriving again rebuilds it.
public struct SubscriptionArchive: Sendable {
    private let logger: Logger

    public init(logger: Logger) { self.logger = logger }

    /// Makes the archive of the subscription now in `state` hold `ends`: new ends are recorded; a refund or
    /// revocation the facts no longer show (a reversal) is marked reinstated, and unmarked when it shows again.
    /// `anyRevocation`: whether any of the subscription's facts took a purchase back
    /// (``SubscriptionEvent/mentionsRevocation``); without one no refund or revocation was ever archived, and
    /// nothing is to be marked reinstated.
    public func sync(_ ends: [Lifecycle.End], state: SubscriptionState, anyRevocation: Bool, on connection: PostgresConnection)
        async throws
    {
        // One statement for every end (a subscription that lapsed and came back has one per lapse), each end once: a
        // statement may not update one row twice.
        var recorded = Set<String>()
        let unique = ends.filter { recorded.insert("\($0.transactionId)|\($0.reason.text)").inserted }
        if !unique.isEmpty {
            _ = try await connection.run(
                PreparedQuery<Record>(
                    state.originalTransactionId, unique.map(\.transactionId), unique.map(\.reason.text), unique.map { $0.at ?? .distantPast },
                    unique.map { $0.at != nil },
                    state.accountId,
                    state.productId),
                logger: logger)
        }
        guard anyRevocation else { return }
        let standing = ends.filter(\.reason.removesCredits).map { "\($0.transactionId)|\($0.reason.text)" }
        _ = try await connection.run(PreparedQuery<Reinstate>(state.originalTransactionId, standing), logger: logger)
    }

    /// How many subscriptions `account` lost to a refund, revocation or transfer (they no longer list it as owner).
    public func count(ofAccount account: AccountID, on connection: PostgresConnection) async throws -> Int {
        let rows = try await connection.query(
            "SELECT count(DISTINCT original_transaction_id)::int FROM subscription_archive WHERE account_id = \(account)", logger: logger)
        for try await count in rows.decode(Int.self) { return count }
        return 0
    }

    /// Records subscription `$1`'s ends (transaction `$2`, reason `$3`, at `$4` where `$5` says it has a time) under
    /// owner `$6` and product `$7`; an end recorded before and marked reinstated is unmarked.
    enum Record: PreparedSQL {
        static let sql = """
            INSERT INTO subscription_archive (original_transaction_id, transaction_id, reason, account_id, product_id, ended_at)
            SELECT $1::text, e.transaction_id, e.reason, $6::text, $7::text, CASE WHEN e.dated THEN e.ended_at END
            FROM unnest($2::text[], $3::text[], $4::timestamptz[], $5::boolean[]) AS e(transaction_id, reason, ended_at, dated)
            ON CONFLICT (original_transaction_id, transaction_id, reason) DO UPDATE SET reinstated_at = NULL
                WHERE subscription_archive.reinstated_at IS NOT NULL
            """
    }

    /// Marks the refunds and revocations of subscription `$1` reinstated, but for those in `$2` (`transactionId|reason`).
    enum Reinstate: PreparedSQL {
        static let sql = """
            UPDATE subscription_archive SET reinstated_at = now()
            WHERE original_transaction_id = $1 AND reason IN ('REFUND', 'REVOKE')
                AND reinstated_at IS NULL AND NOT (transaction_id || '|' || reason = ANY($2::text[]))
            """
    }
}
