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

    /// What a top-up credited and what of it was spent, first in, first out over its account's top-up bucket.
    public func consumption(ofTopUp transactionId: String, on connection: PostgresConnection) async throws -> PurchaseConsumption {
        let rows = try await connection.query(
            """
            SELECT b.meter, l.operation_key, l.bucket, l.delta, l.reason
            FROM credit_ledger l JOIN credit_buckets b ON b.key = l.bucket
            WHERE l.bucket = (SELECT bucket FROM credit_ledger WHERE operation_key = \("topup:" + transactionId))
            ORDER BY l.id
            """, logger: logger)
        var meter = ""
        var entries: [LedgerEntry] = []
        for try await (bucketMeter, key, bucket, delta, reason) in rows.decode((String, String, String, Int64, String).self) {
            meter = bucketMeter
            entries.append(LedgerEntry(operationKey: key, bucket: bucket, delta: delta, reason: reason))
        }
        return PurchaseConsumption.topUp(transactionId, meter: meter, entries: entries)
    }
}

extension CreditLedger {
    /// One spend: when, of which meter, how much.
    public struct UsageRecord: Sendable, Equatable {
        public var at: Date
        public var meter: String
        public var amount: Int64
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

    /// The spends that took from a top-up purchase's own credits (first in, first out over its account's top-up
    /// bucket, as ``consumption(ofTopUp:on:)`` counts them), newest first, at most `limit`.
    public func usage(ofTopUp transactionId: String, limit: Int, on connection: PostgresConnection) async throws -> [UsageRecord] {
        let rows = try await connection.query(
            """
            SELECT l.created_at, b.meter, l.operation_key, l.bucket, l.delta, l.reason
            FROM credit_ledger l JOIN credit_buckets b ON b.key = l.bucket
            WHERE l.bucket = (SELECT bucket FROM credit_ledger WHERE operation_key = \("topup:" + transactionId))
            ORDER BY l.id
            """, logger: logger)
        var rowsRead: [(at: Date, meter: String)] = []
        var entries: [LedgerEntry] = []
        for try await (at, meter, key, bucket, delta, reason) in rows.decode((Date, String, String, String, Int64, String).self) {
            rowsRead.append((at, meter))
            entries.append(LedgerEntry(operationKey: key, bucket: bucket, delta: delta, reason: reason))
        }
        let spends = PurchaseConsumption.attribution(ofTopUp: transactionId, entries: entries).spends
        return spends.keys.filter { entries[$0].reason == "usage" }.sorted(by: >).prefix(limit).map {
            UsageRecord(at: rowsRead[$0].at, meter: rowsRead[$0].meter, amount: spends[$0]!)
        }
    }

    private static func usage(_ rows: PostgresRowSequence) async throws -> [UsageRecord] {
        var records: [UsageRecord] = []
        for try await (at, meter, amount) in rows.decode((Date, String, Int64).self) {
            records.append(UsageRecord(at: at, meter: meter, amount: amount))
        }
        return records
    }
}
