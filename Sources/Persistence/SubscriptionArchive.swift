import Foundation
import Logging
import PostgresNIO
import Subscriptions

/// The archive of ended subscriptions: one row per (subscription, transaction, reason), marked reinstated when a
/// refund is reversed. It is a projection of the lifecycle effects, so a replay rebuilds it.
public struct SubscriptionArchive: Sendable {
    private let logger: Logger

    public init(logger: Logger) { self.logger = logger }

    /// Records the archive effects among `effects` for the subscription now in `state`.
    public func record(_ effects: [LifecycleEffect], state: SubscriptionState, on connection: PostgresConnection)
        async throws
    {
        for effect in effects {
            switch effect {
            case .ended(let reason, let transactionId, let endedAt):
                try await connection.query(
                    """
                    INSERT INTO subscription_archive (original_transaction_id, transaction_id, reason, account_id,
                        product_id, ended_at)
                    VALUES (\(state.originalTransactionId), \(transactionId), \(reason), \(state.accountId),
                        \(state.productId), \(endedAt))
                    ON CONFLICT (original_transaction_id, transaction_id, reason) DO NOTHING
                    """,
                    logger: logger
                )
            case .refundReversed(let transactionId):
                try await connection.query(
                    """
                    UPDATE subscription_archive SET reinstated_at = now()
                    WHERE original_transaction_id = \(state.originalTransactionId)
                        AND transaction_id = \(transactionId) AND reason = 'REFUND' AND reinstated_at IS NULL
                    """,
                    logger: logger
                )
            case .periodStarted, .periodExtended, .earlierPeriodRefunded, .recheckRenewal:
                continue
            }
        }
    }

    /// Forgets the archive of one subscription, before a replay records it again.
    public func forget(_ originalTransactionId: String, on connection: PostgresConnection) async throws {
        try await connection.query(
            "DELETE FROM subscription_archive WHERE original_transaction_id = \(originalTransactionId)", logger: logger)
    }
}
