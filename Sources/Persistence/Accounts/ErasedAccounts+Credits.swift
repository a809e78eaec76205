import Credits
import Foundation
import PostgresNIO
import Subscriptions

extension ErasedAccounts {
    /// The account's credits under the pseudonym. Its own buckets' keys name it right after their kind
    /// (`topup:<account>:<meter>`, `daily:<account>:…`, `free:<account>:…`; a grant's `source:…` names the grant): new
    /// buckets under the renamed keys, the ledger moved onto them with the embedded key renamed, the old ones dropped.
    /// Its spends and adjustments, wherever they were charged (its buckets, its subscriptions' cycles, before a transfer
    /// too), are keyed `spend|adjust:<bytes>:<account>:<key>`: renamed with the app's or operator's key hashed.
    func moveCredits(held: [String], from account: AccountID, to pseudonym: AccountID, on connection: PostgresConnection) async throws -> (
        buckets: Int, ledger: Int
    ) {
        let (from, to) = (account.text, pseudonym.text)
        var buckets = try await count(
            connection,
            "UPDATE credit_buckets SET account_id = \(to) WHERE account_id = \(from) AND NOT starts_with(key, kind || ':' || \(from) || ':')")
        buckets += try await count(
            connection,
            """
            INSERT INTO credit_buckets (key, meter, kind, original_transaction_id, billing_period, account_id, valid_from, valid_until, price)
            SELECT kind || ':' || \(to) || ':' || substr(key, char_length(kind || ':' || \(from) || ':') + 1),
                meter, kind, original_transaction_id, billing_period, \(to), valid_from, valid_until, price
            FROM credit_buckets WHERE account_id = \(from) AND starts_with(key, kind || ':' || \(from) || ':')
            ON CONFLICT (key) DO NOTHING
            """)
        // The keys' own builders with an empty key: the exact prefix of the account's keys, length and all.
        let spent = UsageRequests.spendKey(account: account, idempotencyKey: "")
        let spentAs = UsageRequests.spendKey(account: pseudonym, idempotencyKey: "")
        let adjusted = CreditAdjustment.operationKey(account: account, key: "")
        let adjustedAs = CreditAdjustment.operationKey(account: pseudonym, key: "")
        // One pass over the ledger rows of the account's buckets and of its subscriptions' (found by index, not scanned).
        let ledger = try await count(
            connection,
            """
            WITH renamed AS (
                SELECT key AS old, kind || ':' || \(to) || ':' || substr(key, char_length(kind || ':' || \(from) || ':') + 1) AS new
                FROM credit_buckets WHERE account_id = \(from) AND starts_with(key, kind || ':' || \(from) || ':')
            ), rows AS (
                SELECT l.id, l.bucket, l.operation_key, r.old, r.new FROM credit_ledger l LEFT JOIN renamed r ON r.old = l.bucket
                WHERE l.bucket IN (SELECT old FROM renamed)
                    OR l.bucket IN (SELECT key FROM credit_buckets WHERE account_id IN (\(from), \(to)))
                    OR l.bucket IN (SELECT key FROM credit_buckets WHERE original_transaction_id = ANY(\(held)))
            ), renamed_keys AS (
                SELECT id, coalesce(new, bucket) AS bucket, operation_key AS before,
                    CASE WHEN starts_with(operation_key, \(spent)) AND operation_key LIKE '%:reversed'
                             -- A spend given back keeps its mark, after its debit's key moved as the debit's did.
                             THEN \(spentAs) || md5(substr(operation_key, char_length(\(spent)) + 1, char_length(operation_key)
                                 - char_length(\(spent)) - char_length(':reversed'))) || ':reversed'
                         WHEN starts_with(operation_key, \(spent))
                             THEN \(spentAs) || md5(substr(operation_key, char_length(\(spent)) + 1))
                         WHEN starts_with(operation_key, \(adjusted))
                             THEN \(adjustedAs) || md5(substr(operation_key, char_length(\(adjusted)) + 1))
                         WHEN old IS NOT NULL THEN replace(operation_key, old, new)
                         ELSE operation_key END AS operation_key
                FROM rows
            ), moved AS (
                -- An id used again after its erasure can repeat a key the pseudonym holds already (the same spend key,
                -- today's daily grant): the row's id keeps the second one apart.
                SELECT r.id, r.bucket, CASE WHEN r.operation_key <> r.before AND EXISTS (SELECT 1 FROM credit_ledger x WHERE x.operation_key = r.operation_key)
                                            THEN r.operation_key || ':erased-' || r.id ELSE r.operation_key END AS operation_key
                FROM renamed_keys r
            )
            UPDATE credit_ledger l SET bucket = c.bucket, operation_key = c.operation_key
            FROM moved c WHERE l.id = c.id AND (l.bucket <> c.bucket OR l.operation_key <> c.operation_key)
            """)
        _ = try await count(
            connection, "DELETE FROM credit_buckets WHERE account_id = \(from) AND starts_with(key, kind || ':' || \(from) || ':')")
        return (buckets, ledger)
    }
}
