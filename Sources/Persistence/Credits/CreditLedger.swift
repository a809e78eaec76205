import Credits
import Foundation
import Logging
import Metrics
import PostgresNIO
import StatementFencing
import Subscriptions

/// The append-only credit ledger (SPEC §7): buckets with validity windows and signed deltas with unique operation
/// keys. Every row is written unless its operation key is posted already (``apply(_:readingStatusOf:at:on:)``, and
/// spends), so replaying any event never doubles a row; balances are sums of the rows of live buckets (each bucket's sum
/// kept by the ledger's triggers, sql/0041).
public struct CreditLedger: Sendable {
    public let catalogue: TierCatalogue
    public let logger: Logger

    public init(catalogue: TierCatalogue, logger: Logger) {
        self.catalogue = catalogue
        self.logger = logger
    }

    /// Serializes every credit change and spend of one account for the rest of the caller's transaction.
    public func lockAccount(_ account: AccountID, on connection: PostgresConnection) async throws {
        _ = try await connection.run(PreparedQuery<AccountLock>(Self.lockKey(account)), logger: logger)
    }

    /// What the lock of `account` is named (hashed with `hashtextextended(key, 0)`): applies and spends take the same.
    static func lockKey(_ account: AccountID) -> String { "account:" + account.text }

    /// Takes the transaction-scoped lock of account key `$1` (every apply and spend group takes one).
    enum AccountLock: PreparedSQL {
        static let sql = "SELECT pg_advisory_xact_lock(hashtextextended($1, 0))"
    }

    /// Counts a ledger row written under `operationKey` in `storekeeper_credit_operations_total{operation}`.
    static func countPosted(_ operationKey: String) {
        Counter(label: "storekeeper_credit_operations_total", dimensions: [("operation", String(operationKey.prefix { $0 != ":" }))]).increment()
    }

    /// The buckets of each of `accounts` live at `now`, in spend order (daily, then cycle and free by soonest end,
    /// then top-ups), with balances, in one read.
    /// With `orLater`, buckets whose window opens after `now` come too (a cached read filters them by its own now).
    public func liveBuckets(
        of accounts: [AccountID], at now: Date, orLater: Bool = false, on connection: PostgresConnection
    ) async throws -> [AccountID: [AccountCredits.LiveBalance]] {
        let ids = Set(accounts).map(\.text)
        let rows = try await connection.run(PreparedQuery<LiveBuckets>(ids, now, orLater), logger: logger)
        var buckets: [AccountID: [AccountCredits.LiveBalance]] = [:]
        for row in rows {
            let (balance, owner) = try Self.liveBalance(row, at: 0)
            buckets[owner, default: []].append(balance)
        }
        return buckets
    }

    /// A live bucket with its balance, and the account it counts for, from the eleven columns of ``LiveBuckets``
    /// that start at `offset`.
    static func liveBalance(_ row: PostgresRow, at offset: Int) throws -> (AccountCredits.LiveBalance, owner: AccountID) {
        let cells = row.makeRandomAccess()
        return (
            AccountCredits.LiveBalance(bucket: try bucket(row, at: offset), balance: try cells[offset + 9].decode(Int64.self)),
            try cells[offset + 10].decode(AccountID.self)
        )
    }

    /// The buckets of accounts `$1` live at `$2` (or later with `$3`), with balances, in spend order
    /// (`live_credit_buckets`, sql/0014_live_credit_buckets.sql: a function, planned once per connection without
    /// sequential scans).
    enum LiveBuckets: PreparedSQL {
        static let sql = "SELECT \(columns) FROM live_credit_buckets($1::text[], $2, $3) ORDER BY \(order)"
        /// The columns ``liveBalance(_:at:)`` reads.
        static let columns = """
            bucket_key, bucket_meter, bucket_kind, bucket_subscription, bucket_billing_period, bucket_account,
                bucket_valid_from, bucket_valid_until, bucket_price, bucket_balance, bucket_owner
            """
        /// Spend order: daily, then cycle and free by soonest end, then top-ups.
        static let order = """
            bucket_owner, CASE bucket_kind WHEN 'daily' THEN 0 WHEN 'topup' THEN 2 ELSE 1 END, bucket_valid_until NULLS LAST, bucket_key
            """
    }
}
