import Credits
import Foundation
import PostgresNIO
import StatementFencing
import Subscriptions

extension CreditLedger {
    /// What an account's status is computed from, in one read: its subscriptions (by originalTransactionId) and its
    /// buckets live at `now` — or later, with `orLater` — in spend order, with balances (``liveBuckets(of:at:orLater:on:)``).
    public func statusInputs(of account: AccountID, at now: Date, orLater: Bool = false, on connection: PostgresConnection)
        async throws -> (subscriptions: [SubscriptionState], buckets: [AccountCredits.LiveBalance])
    {
        let rows = try await connection.run(PreparedQuery<StatusInputs>(account.text, now, orLater), logger: logger)
        var subscriptions: [SubscriptionState] = []
        var buckets: [AccountCredits.LiveBalance] = []
        for row in rows {
            let cells = row.makeRandomAccess()
            if try cells["original_transaction_id"].decode(String?.self) != nil {
                subscriptions.append(try SubscriptionStore.decode(row))
            } else {
                buckets.append(try Self.liveBalance(row, at: SubscriptionStore.columnCount).0)
            }
        }
        return (subscriptions, buckets)
    }

    /// The subscriptions of account `$1`, then its buckets live at `$2` (or later with `$3`) in spend order: each row
    /// one or the other, the other's columns NULL (a full join on false), in one round trip instead of two.
    enum StatusInputs: PreparedSQL {
        static let sql = """
            SELECT owned.*, live.*
            FROM (SELECT \(SubscriptionStore.columns) FROM subscriptions WHERE account_id = $1) AS owned
            FULL JOIN (\(LiveBuckets.select) FROM live_credit_buckets(ARRAY[$1::text], $2, $3)) AS live ON false
            ORDER BY owned.original_transaction_id, \(LiveBuckets.order)
            """
    }
}
