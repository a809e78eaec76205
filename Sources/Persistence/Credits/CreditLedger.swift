import Credits
import Foundation
import Jobs
import Logging
import Metrics
import PostgresNIO
import Subscriptions

/// The append-only credit ledger (SPEC §7): buckets with validity windows and signed deltas with unique operation
/// keys. Every write goes through ``post(_:bucket:delta:reason:on:)``, so replaying any event never doubles a row;
/// balances are sums of the rows of live buckets.
public struct CreditLedger: Sendable {
    /// Job kind of the monthly reset of annual plans.
    public static let monthlyResetJobKind = "credit-reset"

    /// Arguments of the monthly reset job.
    public struct MonthlyReset: Codable, Sendable {
        public var originalTransactionId: String
        public var transactionId: String
        public var month: Int
    }

    public let catalogue: TierCatalogue
    let queue: PostgresJobQueue
    let logger: Logger

    public init(catalogue: TierCatalogue, queue: PostgresJobQueue, logger: Logger) {
        self.catalogue = catalogue
        self.queue = queue
        self.logger = logger
    }

    /// One bucket to open.
    struct Bucket {
        enum Kind: String { case cycle, topup, daily, free }
        var key: String
        var meter: String
        var kind: Kind
        var originalTransactionId: String? = nil
        var transactionId: String? = nil
        var accountId: UUID? = nil
        var window: DateInterval?
        var price: Int64? = nil

        static func topUp(account: UUID, meter: String) -> Bucket {
            Bucket(key: "topup:\(account.uuidString.lowercased()):\(meter)", meter: meter, kind: .topup, accountId: account, window: nil)
        }
    }

    /// Serializes every credit change and spend of one account for the rest of the caller's transaction.
    func lockAccount(_ account: UUID, on connection: PostgresConnection) async throws {
        try await connection.query(
            "SELECT pg_advisory_xact_lock(hashtextextended(\("account:" + account.uuidString.lowercased()), 0))", logger: logger)
    }

    /// Opens a bucket unless it exists.
    func open(_ bucket: Bucket, on connection: PostgresConnection) async throws {
        _ = try await connection.run(OpenBucket(bucket: bucket), logger: logger)
    }

    /// Appends one ledger row; a zero delta or an operation key already posted writes nothing. Returns whether a
    /// row was written.
    @discardableResult
    func post(_ operationKey: String, bucket: String, delta: Int64, reason: String, on connection: PostgresConnection)
        async throws -> Bool
    {
        guard delta != 0 else { return false }
        let rows = try await connection.run(
            PostEntry(operationKey: operationKey, bucket: bucket, delta: delta, reason: reason), logger: logger)
        return Self.counted(rows, operationKey)
    }

    /// Opens `bucket` unless it exists and posts to it as ``post(_:bucket:delta:reason:on:)`` does, in one round
    /// trip. Returns whether a ledger row was written.
    @discardableResult
    func post(_ operationKey: String, opening bucket: Bucket, delta: Int64, reason: String, on connection: PostgresConnection)
        async throws -> Bool
    {
        guard delta != 0 else {
            try await open(bucket, on: connection)
            return false
        }
        let rows = try await connection.run(
            OpenBucketAndPost(bucket: bucket, operationKey: operationKey, delta: delta, reason: reason), logger: logger)
        return Self.counted(rows, operationKey)
    }

    /// Whether the ledger insert returned its row, counted in `storekeeper_credit_operations_total{operation}`
    /// (grant, spend, refund, revoke, reversed, carry, clawback, topup) when it did.
    private static func counted(_ rows: [some Sendable], _ operationKey: String) -> Bool {
        guard !rows.isEmpty else { return false }
        Counter(label: "storekeeper_credit_operations_total", dimensions: [("operation", String(operationKey.prefix { $0 != ":" }))]).increment()
        return true
    }

    /// The balance of one bucket.
    func balance(of bucket: String, on connection: PostgresConnection) async throws -> Int64 {
        let rows = try await connection.query(
            "SELECT coalesce(sum(delta), 0)::bigint FROM credit_ledger WHERE bucket = \(bucket)", logger: logger)
        for try await value in rows.decode(Int64.self) { return value }
        return 0
    }

    /// The cycle buckets of one period's transaction, with balances, latest window first.
    func cycleBuckets(ofTransaction transactionId: String, on connection: PostgresConnection) async throws
        -> [(key: String, meter: String, balance: Int64, validUntil: Date?)]
    {
        let rows = try await connection.query(
            """
            SELECT b.key, b.meter, coalesce(sum(l.delta), 0)::bigint, b.valid_until
            FROM credit_buckets b LEFT JOIN credit_ledger l ON l.bucket = b.key
            WHERE b.transaction_id = \(transactionId) AND b.kind = 'cycle'
            GROUP BY b.key ORDER BY b.valid_until DESC NULLS FIRST, b.key
            """,
            logger: logger)
        var buckets: [(key: String, meter: String, balance: Int64, validUntil: Date?)] = []
        for try await (key, meter, balance, validUntil) in rows.decode((String, String, Int64, Date?).self) {
            buckets.append((key, meter, balance, validUntil))
        }
        return buckets
    }

    /// An account's live buckets of one meter at `now`, in spend order (daily, then cycle and free by soonest end,
    /// then top-ups), with balances.
    func liveBuckets(of account: UUID, meter: String?, at now: Date, on connection: PostgresConnection) async throws
        -> [LiveBucket]
    {
        let rows = try await connection.query(
            """
            SELECT b.key, b.meter, b.kind, b.valid_until, coalesce(sum(l.delta), 0)::bigint
            FROM credit_buckets b LEFT JOIN credit_ledger l ON l.bucket = b.key
            WHERE (b.account_id = \(account) OR b.original_transaction_id IN
                    (SELECT original_transaction_id FROM subscriptions WHERE account_id = \(account)))
                AND (\(meter)::text IS NULL OR b.meter = \(meter))
                AND b.valid_from <= \(now) AND (b.valid_until IS NULL OR b.valid_until > \(now))
            GROUP BY b.key
            ORDER BY CASE b.kind WHEN 'daily' THEN 0 WHEN 'topup' THEN 2 ELSE 1 END, b.valid_until NULLS LAST, b.key
            """,
            logger: logger)
        var buckets: [LiveBucket] = []
        for try await (key, meter, kind, validUntil, balance) in rows.decode((String, String, String, Date?, Int64).self) {
            buckets.append(LiveBucket(key: key, meter: meter, kind: kind, validUntil: validUntil, balance: balance))
        }
        return buckets
    }

    struct LiveBucket {
        var key: String
        var meter: String
        var kind: String
        var validUntil: Date?
        var balance: Int64
    }
}
