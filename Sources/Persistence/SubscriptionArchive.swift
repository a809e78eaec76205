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
        for end in ends {
            try await connection.query(
                """
                INSERT INTO subscription_archive (original_transaction_id, transaction_id, reason, account_id,
                    product_id, ended_at)
                VALUES (\(state.originalTransactionId), \(end.transactionId), \(end.reason.text), \(state.accountId),
                    \(state.productId), \(end.at))
                ON CONFLICT (original_transaction_id, transaction_id, reason) DO UPDATE SET reinstated_at = NULL
                    WHERE subscription_archive.reinstated_at IS NOT NULL
                """,
                logger: logger
            )
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

    /// Marks the refunds and revocations of subscription `$1` reinstated, but for those in `$2` (`transactionId|reason`).
    enum Reinstate: PreparedSQL {
        static let sql = """
            UPDATE subscription_archive SET reinstated_at = now()
            WHERE original_transaction_id = $1 AND reason IN ('REFUND', 'REVOKE')
                AND reinstated_at IS NULL AND NOT (transaction_id || '|' || reason = ANY($2::text[]))
            """
    }
}
