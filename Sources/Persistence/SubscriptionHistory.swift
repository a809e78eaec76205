import AppStoreModels
import Foundation
import Logging
import PostgresNIO
import Subscriptions

/// Every stored event of a subscription — the notifications Apple sent and the transactions apps claimed — for
/// replay, and the records of claims and transfers.
public struct SubscriptionHistory: Sendable {
    private let logger: Logger

    public init(logger: Logger) { self.logger = logger }

    /// The events of `originalTransactionId` as stored, in no particular order.
    public func events(of originalTransactionId: String, on connection: PostgresConnection) async throws
        -> [SubscriptionEvent]
    {
        let rows = try await connection.query(
            """
            SELECT 'n', decoded::text, NULL::uuid FROM notifications WHERE original_transaction_id = \(originalTransactionId)
            UNION ALL
            SELECT 'c', decoded::text, account_id FROM subscription_claims WHERE original_transaction_id = \(originalTransactionId)
            """,
            logger: logger
        )
        var events: [SubscriptionEvent] = []
        let decoder = JSONDecoder()
        for try await (source, text, claimant) in rows.decode((String, String, UUID?).self) {
            do {
                if source == "n" {
                    let notification = try decoder.decode(VerifiedNotification.self, from: Data(text.utf8))
                    if let event = SubscriptionEvent(notification) { events.append(event) }
                } else if let claimant {
                    let transaction = try decoder.decode(TransactionPayload.self, from: Data(text.utf8))
                    if let event = SubscriptionEvent(claimOf: transaction, by: claimant) { events.append(event) }
                }
            } catch {
                throw PersistenceError(.corruptRecord, "a stored event of subscription \(originalTransactionId) does not decode")
            }
        }
        return events
    }

    /// Stores a verified claim; a claim stored before is left as it is.
    public func recordClaim(_ event: SubscriptionEvent, signedTransaction: String, on connection: PostgresConnection)
        async throws
    {
        guard let account = event.claimant else { return }
        let decoded = String(decoding: try JSONEncoder().encode(event.transaction), as: UTF8.self)
        try await connection.query(
            """
            INSERT INTO subscription_claims (event_id, original_transaction_id, transaction_id, account_id, signed_date,
                signed_transaction, decoded)
            VALUES (\(event.id), \(event.transaction.originalTransactionId), \(event.transaction.transactionId),
                \(account), \(event.signedDate), \(signedTransaction), \(decoded)::jsonb)
            ON CONFLICT (event_id) DO NOTHING
            """,
            logger: logger
        )
    }

    /// Records that a subscription moved from one account to another.
    public func recordTransfer(_ originalTransactionId: String, from: UUID, to: UUID, on connection: PostgresConnection)
        async throws
    {
        try await connection.query(
            """
            INSERT INTO account_transfers (original_transaction_id, from_account, to_account)
            VALUES (\(originalTransactionId), \(from), \(to))
            """,
            logger: logger
        )
    }
}
