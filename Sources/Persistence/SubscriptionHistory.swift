import AppStoreModels
import Foundation
import Logging
import PayloadDecoding
import PostgresNIO
import StatementFencing
import Subscriptions

/// Every stored event of a subscription — the notifications Apple sent, the transactions apps claimed, the snapshots
/// the App Store Server API returned — for replay, and the records of those events and of transfers.
public struct SubscriptionHistory: Sendable {
    private let logger: Logger

    public init(logger: Logger) { self.logger = logger }

    /// A subscription's row (`nil` before its first save) and its events as stored, in no particular order.
    public typealias Read = (subscription: SubscriptionState?, events: [SubscriptionEvent])

    /// The subscription's row and its stored events, in one read. Made under the subscription's lock
    /// (``SubscriptionStore/lock(_:on:)``), by a later statement than the one that waited for it, so it sees what the
    /// previous holder committed. (An apply reads them with its notification:
    /// ``NotificationStore/notificationLockingSubscription(_:on:)``.)
    public func subscriptionAndEvents(of originalTransactionId: String, on connection: PostgresConnection) async throws -> Read {
        try Self.read(
            try await connection.run(PreparedQuery<SubscriptionAndEvents>(originalTransactionId), logger: logger), of: originalTransactionId)
    }

    /// The subscription and events in `rows` — the columns of `subscription_and_events` (sql/0018): the subscription's
    /// as in ``SubscriptionStore/columns``, then `source` ('n' for a notification, 'e' for another event, NULL for
    /// none), `decoded` and `parts`.
    static func read(_ rows: some Sequence<PostgresRow>, of originalTransactionId: String) throws -> Read {
        var subscription: SubscriptionState?
        var events: [SubscriptionEvent] = []
        let decoder = JSONDecoder()
        for row in rows {
            let cells = row.makeRandomAccess()
            if subscription == nil, try cells["original_transaction_id"].decode(String?.self) != nil {
                subscription = try SubscriptionStore.decode(row)
            }
            do {
                guard let source = try cells["source"].decode(String?.self) else { continue }
                let text = try cells["decoded"].decode(String?.self)
                if source == "n" {
                    // Content outside the limits is never applied, also not in a replay (rows stored before the
                    // intake checked it have no rejected_reason).
                    let parts = try cells["parts"].decode(ByteBuffer?.self)
                    guard let notification = try StoredNotificationFacts.notification(decoded: text, parts: parts) else { continue }
                    if notification.contentProblem == nil, let event = SubscriptionEvent(notification) { events.append(event) }
                } else if let text {
                    events.append(try decoder.decode(SubscriptionEvent.self, from: Data(text.utf8)))
                }
            } catch {
                throw PersistenceError(.corruptRecord, "a stored event of subscription \(originalTransactionId) does not decode")
            }
        }
        return (subscription, events)
    }

    /// Subscription `$1`'s row (NULLs when it has none) beside each of its notifications (not rejected) and other
    /// events (`source` 'n' or 'e'; none: one row with NULLs); `subscription_and_events`, sql/0018: planned once per
    /// connection.
    enum SubscriptionAndEvents: PreparedSQL {
        /// The columns ``read(_:of:)`` decodes.
        static let columns = "\(SubscriptionStore.columns(of: "subscription")), source, decoded, parts"
        static let sql = """
            SELECT \(columns) FROM subscription_and_events($1::text)
            """
    }

    /// The newest signed version of `transaction` among it and the stored notifications about it (a refund that
    /// arrived before the claim of a consumable, say).
    public func newestVersion(of transaction: TransactionPayload, on connection: PostgresConnection) async throws -> TransactionPayload {
        let rows = try await connection.query(
            """
            SELECT decoded::text, signed_parts FROM notifications
            WHERE original_transaction_id = \(transaction.originalTransactionId) AND rejected_reason IS NULL
            """,
            logger: logger)
        var newest = transaction
        for try await (text, parts) in rows.decode((String?, ByteBuffer?).self) {
            guard let stored = (try? StoredNotificationFacts.notification(decoded: text, parts: parts))??.transaction,
                stored.transactionId == transaction.transactionId, (stored.signedDate ?? 0) > (newest.signedDate ?? 0)
            else { continue }
            newest = stored
        }
        return newest
    }

    /// Every subscription with stored facts or a stored state.
    public func subscriptionIds(on connection: PostgresConnection) async throws -> [String] {
        let rows = try await connection.query(
            """
            SELECT original_transaction_id FROM notifications WHERE original_transaction_id IS NOT NULL
            UNION SELECT original_transaction_id FROM subscription_events
            UNION SELECT original_transaction_id FROM subscriptions
            UNION SELECT id FROM stripe_objects WHERE object = 'subscription'
            ORDER BY 1
            """,
            logger: logger)
        var ids: [String] = []
        for try await id in rows.decode(String.self) { ids.append(id) }
        return ids
    }

    /// Stores a verified event that is not a notification — a claim or a Server API snapshot — with the signed data
    /// it was verified from; an event stored before is left as it is.
    public func record(_ event: SubscriptionEvent, signedData: String, on connection: PostgresConnection) async throws {
        let decoded = String(decoding: try JSONEncoder().encode(event), as: UTF8.self)
        let source = event.claimant == nil ? "server_api" : "claim"
        try await connection.query(
            """
            INSERT INTO subscription_events (event_id, source, original_transaction_id, transaction_id, account_id,
                signed_date, signed_data, decoded)
            VALUES (\(event.id), \(source), \(event.transaction.originalTransactionId), \(event.transaction.transactionId),
                \(event.claimant), \(event.signedDate), \(signedData), \(decoded)::jsonb)
            ON CONFLICT (event_id) DO NOTHING
            """,
            logger: logger
        )
    }

    /// Records that a subscription moved from one account to another.
    public func recordTransfer(_ originalTransactionId: String, from: AccountID, to: AccountID, on connection: PostgresConnection)
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
