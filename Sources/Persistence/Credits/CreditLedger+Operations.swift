import Credits
import Foundation
import PostgresNIO
import StatementFencing
import Subscriptions

extension CreditLedger {
    /// The ledger rows the credit rules of one subscription need: its cycle buckets, and — when it has an owner — the
    /// owner's live buckets (a prorated refund claws back from them), with every entry of those buckets, in one round
    /// trip (`credit_ledger_snapshot`, sql/0016_credit_ledger_snapshot.sql). With `lockingAccount`, the owner's lock
    /// (``lockAccount(_:on:)``) is taken first, in the same round trip, and the read sees what its previous holder
    /// committed.
    public func snapshot(
        ofSubscription originalTransactionId: String, account: AccountID?, now: Date, lockingAccount: Bool = false,
        on connection: PostgresConnection
    ) async throws -> LedgerSnapshot {
        let lockKey = lockingAccount ? account.map(Self.lockKey) : nil
        let rows = try await connection.run(
            PreparedQuery<Snapshot>(lockKey, originalTransactionId, account?.text, now), logger: logger)
        var buckets: [CreditBucket] = []
        var entries: [LedgerEntry] = []
        for row in rows {
            let bucket = try Self.bucket(row)
            if buckets.last?.key != bucket.key { buckets.append(bucket) }
            let columns = row.makeRandomAccess()
            guard let operationKey = try columns[9].decode(String?.self) else { continue }
            entries.append(
                LedgerEntry(
                    operationKey: operationKey, bucket: bucket.key, delta: try columns[10].decode(Int64.self),
                    reason: try columns[11].decode(String.self)))
        }
        return LedgerSnapshot(buckets: buckets, entries: entries)
    }

    /// The account a top-up purchase was credited to, if it was.
    public func creditedAccount(ofTopUp transactionId: String, on connection: PostgresConnection) async throws -> AccountID? {
        let rows = try await connection.query(
            """
            SELECT b.account_id FROM credit_ledger l JOIN credit_buckets b ON b.key = l.bucket
            WHERE l.operation_key = \("topup:" + transactionId)
            """,
            logger: logger)
        for try await account in rows.decode(AccountID?.self) { return account }
        return nil
    }

    /// Posts what the credit rules decided, in order, inside the caller's transaction.
    public func apply(_ operations: [LedgerOperation], on connection: PostgresConnection) async throws {
        for operation in operations {
            switch operation {
            case .post(let entry, let bucket?):
                try await post(entry.operationKey, opening: bucket, delta: entry.delta, reason: entry.reason, on: connection)
            case .post(let entry, nil):
                try await post(entry.operationKey, bucket: entry.bucket, delta: entry.delta, reason: entry.reason, on: connection)
            case .setWindowEnd(let bucket, let end):
                try await connection.query("UPDATE credit_buckets SET valid_until = \(end) WHERE key = \(bucket)", logger: logger)
            }
        }
    }

    /// A bucket from the nine columns of `row` that start at `offset` (key, meter, kind, subscription, billing period,
    /// account, valid from, valid until, price).
    static func bucket(_ row: PostgresRow, at offset: Int = 0) throws -> CreditBucket {
        let cells = row.makeRandomAccess()
        return CreditBucket(
            key: try cells[offset].decode(String.self), meter: try cells[offset + 1].decode(String.self),
            kind: CreditBucket.Kind(try cells[offset + 2].decode(String.self)),
            originalTransactionId: try cells[offset + 3].decode(String?.self), billingPeriod: try cells[offset + 4].decode(String?.self),
            accountId: try cells[offset + 5].decode(AccountID?.self), validFrom: try cells[offset + 6].decode(Date.self).wholeMilliseconds,
            validUntil: try cells[offset + 7].decode(Date?.self)?.wholeMilliseconds, price: try cells[offset + 8].decode(Int64?.self))
    }

    /// Takes lock `$1` unless NULL, then reads the buckets of subscription `$2` and the buckets of account `$3` live at
    /// `$4`, with their ledger entries, ordered by bucket.
    enum Snapshot: PreparedSQL {
        static let sql = """
            SELECT bucket_key, bucket_meter, bucket_kind, bucket_subscription, bucket_billing_period, bucket_account,
                bucket_valid_from, bucket_valid_until, bucket_price, entry_operation_key, entry_delta, entry_reason
            FROM credit_ledger_snapshot($1::text, $2::text, $3::text, $4::timestamptz)
            """
    }
}
