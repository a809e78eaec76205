import Credits
import Foundation
import PostgresNIO
import StatementFencing
import Subscriptions

extension CreditLedger {
    /// The ledger rows the credit rules of one subscription need: its cycle buckets, and — when it has an owner — the
    /// owner's live buckets (a prorated refund claws back from them), with every entry of those buckets.
    public func snapshot(ofSubscription originalTransactionId: String, account: AccountID?, now: Date, on connection: PostgresConnection)
        async throws -> LedgerSnapshot
    {
        let rows = try await connection.run(PreparedQuery<SnapshotBuckets>(originalTransactionId, account, now), logger: logger)
        let buckets = try rows.map(Self.bucket)
        // A subscription's first notification finds no bucket: no second round trip for its (no) rows.
        guard !buckets.isEmpty else { return LedgerSnapshot(buckets: [], entries: []) }
        let entryRows = try await connection.run(PreparedQuery<BucketEntries>(buckets.map(\.key)), logger: logger)
        let entries = try entryRows.map { row in
            let (key, bucket, delta, reason) = try row.decode((String, String, Int64, String).self)
            return LedgerEntry(operationKey: key, bucket: bucket, delta: delta, reason: reason)
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

    static let bucketColumns = """
        b.key, b.meter, b.kind, b.original_transaction_id, b.billing_period, b.account_id, b.valid_from, b.valid_until, b.price
        """

    static func bucket(_ row: PostgresRow) throws -> CreditBucket {
        let (key, meter, kind, subscription, period, account, from, until, price) = try row.decode(
            (String, String, String, String?, String?, AccountID?, Date, Date?, Int64?).self)
        return CreditBucket(
            key: key, meter: meter, kind: CreditBucket.Kind(kind), originalTransactionId: subscription, billingPeriod: period,
            accountId: account, validFrom: from, validUntil: until, price: price)
    }

    /// The buckets of subscription `$1`, and those live at `$3` of account `$2` (NULL: none).
    enum SnapshotBuckets: PreparedSQL {
        static let sql = """
            SELECT \(bucketColumns) FROM credit_buckets b WHERE b.original_transaction_id = $1
            UNION
            SELECT \(bucketColumns) FROM credit_buckets b
            WHERE b.account_id = $2 AND b.valid_from <= $3 AND (b.valid_until IS NULL OR b.valid_until > $3)
            UNION
            SELECT \(bucketColumns) FROM subscriptions s JOIN credit_buckets b ON b.original_transaction_id = s.original_transaction_id
            WHERE s.account_id = $2 AND b.valid_from <= $3 AND (b.valid_until IS NULL OR b.valid_until > $3)
            """
    }

    /// The ledger entries of buckets `$1`.
    enum BucketEntries: PreparedSQL {
        static let sql = "SELECT operation_key, bucket, delta, reason FROM credit_ledger WHERE bucket = ANY($1::text[])"
    }
}
