import Credits
import Foundation
import PostgresNIO
import Subscriptions

extension CreditLedger {
    /// The reasons of rows that are use: spends and settled holds' charges (`usage`), less spends given back.
    static let usageReasons = "'usage', 'usage reversed'"
    /// The reasons of a hold's bookkeeping: its debit, what went back, the charge's offset (what it charged is `usage`).
    static let holdReasons = "'hold', 'hold returned', 'hold charged'"

    /// What one billing period of a subscription credited and what of it was spent, per meter.
    public func consumption(ofSubscription originalTransactionId: String, period: String, on connection: PostgresConnection)
        async throws -> PurchaseConsumption
    {
        let rows = try await connection.query(
            """
            SELECT b.meter, coalesce(sum(l.delta) FILTER (WHERE l.reason NOT IN (\(unescaped: Self.usageReasons), \(unescaped: Self.holdReasons))), 0)::bigint,
                   coalesce(-sum(l.delta) FILTER (WHERE l.reason IN (\(unescaped: Self.usageReasons))), 0)::bigint
            FROM credit_buckets b LEFT JOIN credit_ledger l ON l.bucket = b.key
            WHERE b.original_transaction_id = \(originalTransactionId) AND b.billing_period = \(period)
            GROUP BY b.meter
            """, logger: logger)
        var meters: [String: PurchaseConsumption.Meter] = [:]
        for try await (meter, credited, used) in rows.decode((String, Int64, Int64).self) {
            meters[meter] = PurchaseConsumption.Meter(credited: credited, used: used)
        }
        return PurchaseConsumption(meters: meters, delivered: !meters.isEmpty)
    }
}

extension CreditLedger {
    /// One spend: when, of which meter, how much.
    public struct UsageRecord: Sendable, Equatable {
        public var at: Date
        public var meter: String
        public var amount: Int64

        public init(at: Date, meter: String, amount: Int64) { (self.at, self.meter, self.amount) = (at, meter, amount) }
    }

    /// The spends from one billing period's credits, newest first, at most `limit` (a spend given back is one more, of
    /// a negative amount).
    public func usage(ofSubscription originalTransactionId: String, period: String, limit: Int, on connection: PostgresConnection) async throws
        -> [UsageRecord]
    {
        let rows = try await connection.query(
            """
            SELECT l.created_at, b.meter, -l.delta FROM credit_ledger l JOIN credit_buckets b ON b.key = l.bucket
            WHERE b.original_transaction_id = \(originalTransactionId) AND b.billing_period = \(period)
                AND l.reason IN (\(unescaped: Self.usageReasons))
            ORDER BY l.id DESC LIMIT \(limit)
            """, logger: logger)
        return try await Self.usage(rows)
    }

    /// Every ledger row of the top-up bucket that a top-up purchase was credited to, oldest first, with when each was
    /// written: what the purchase's consumption and usage are attributed from, first in, first out (the rule is
    /// ``PurchaseConsumption``'s).
    public struct TopUpRows: Sendable {
        public var transactionId: String
        public var meter: String
        public var entries: [LedgerEntry]
        public var dates: [Date]
    }

    /// The rows of the top-up bucket `transactionId` was credited to (none when it was not).
    public func topUpRows(of transactionId: String, on connection: PostgresConnection) async throws -> TopUpRows {
        let rows = try await connection.query(
            """
            SELECT l.created_at, b.meter, l.operation_key, l.bucket, l.delta, l.reason
            FROM credit_ledger l JOIN credit_buckets b ON b.key = l.bucket
            WHERE l.bucket = (SELECT bucket FROM credit_ledger WHERE operation_key = \("topup:" + transactionId))
            ORDER BY l.id
            """, logger: logger)
        var read = TopUpRows(transactionId: transactionId, meter: "", entries: [], dates: [])
        for try await (at, meter, key, bucket, delta, reason) in rows.decode((Date, String, String, String, Int64, String).self) {
            read.meter = meter
            read.dates.append(at)
            read.entries.append(LedgerEntry(operationKey: key, bucket: bucket, delta: delta, reason: reason))
        }
        return read
    }

    private static func usage(_ rows: some AsyncSequence<PostgresRow, any Error>) async throws -> [UsageRecord] {
        var records: [UsageRecord] = []
        for try await (at, meter, amount) in rows.decode((Date, String, Int64).self) {
            records.append(UsageRecord(at: at, meter: meter, amount: amount))
        }
        return records
    }
}
