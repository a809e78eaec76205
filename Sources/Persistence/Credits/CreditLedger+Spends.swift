import Credits
import Foundation
import Metrics
import PostgresNIO
import Subscriptions

// The statements of a group of spends (see SpendCredits): each reads or writes every account of the group at once.
extension CreditLedger {
    /// Takes the locks of `accounts` for the transaction, in one order (sorted), so that two groups sharing accounts
    /// wait for each other instead of deadlocking.
    public func lockAccounts(_ accounts: [AccountID], on connection: PostgresConnection) async throws {
        let keys = Set(accounts).sorted().map { "account:" + $0.text }
        try await connection.query(
            """
            SELECT count(pg_advisory_xact_lock(hashtextextended(key, 0)))
            FROM (SELECT key FROM unnest(\(keys)::text[]) WITH ORDINALITY AS k(key, position) ORDER BY position) AS ordered
            """, logger: logger)
    }

    /// The credits of each of `accounts` at `now` for spending (the accounts locked), with their live buckets in spend
    /// order, in one read; an account with grants due by the clock has them written first and is read again.
    public func spendableCredits(
        of accounts: [AccountID], subscriptions: [AccountID: [SubscriptionState]], now: Date, on connection: PostgresConnection
    ) async throws -> [AccountID: (credits: AccountCredits, live: [AccountCredits.LiveBalance])] {
        var live = try await liveBuckets(of: accounts, at: now, on: connection)
        var result: [AccountID: (credits: AccountCredits, live: [AccountCredits.LiveBalance])] = [:]
        for account in Set(accounts) {
            let states = subscriptions[account] ?? []
            let due = AccountCredits.grantsDue(account: account, subscriptions: states, catalogue: catalogue, live: live[account] ?? [], now: now)
            if !due.isEmpty {
                try await apply(due, on: connection)
                live[account] = try await liveBuckets(of: account, meter: nil, at: now, on: connection)
            }
            let balances = live[account] ?? []
            result[account] = (AccountCredits.evaluate(subscriptions: states, catalogue: catalogue, live: balances, now: now), balances)
        }
        return result
    }

    /// The buckets of `accounts` live at `now` with their balances, each account's in spend order.
    func liveBuckets(of accounts: [AccountID], at now: Date, on connection: PostgresConnection) async throws
        -> [AccountID: [AccountCredits.LiveBalance]]
    {
        // Shaped like the single-account read (see there): index probes only, whatever the statistics.
        let ids = Set(accounts).map(\.text)
        let rows = try await connection.query(
            """
            SELECT \(unescaped: Self.bucketColumns),
                coalesce((SELECT sum(l.delta) FROM credit_ledger l WHERE l.bucket = b.key), 0)::bigint, b.owner
            FROM (
                SELECT *, account_id AS owner FROM credit_buckets WHERE account_id = ANY(\(ids)::text[])
                UNION ALL
                SELECT c.*, s.account_id FROM subscriptions s CROSS JOIN LATERAL (
                    SELECT * FROM credit_buckets WHERE original_transaction_id = s.original_transaction_id OFFSET 0
                ) c
                WHERE s.account_id = ANY(\(ids)::text[])
            ) b
            WHERE b.valid_from <= \(now) AND (b.valid_until IS NULL OR b.valid_until > \(now))
            ORDER BY b.owner, CASE b.kind WHEN 'daily' THEN 0 WHEN 'topup' THEN 2 ELSE 1 END, b.valid_until NULLS LAST, b.key
            """,
            logger: logger)
        var buckets: [AccountID: [AccountCredits.LiveBalance]] = [:]
        for try await row in rows {
            let columns = row.makeRandomAccess()
            let account = try columns[10].decode(AccountID.self)
            buckets[account, default: []].append(
                AccountCredits.LiveBalance(bucket: try Self.bucket(row), balance: try columns[9].decode(Int64.self)))
        }
        return buckets
    }

    /// Posts `postings` in one statement; an operation key already posted is skipped, as ``post(_:bucket:delta:reason:on:)`` does.
    public func post(_ postings: [LedgerEntry], on connection: PostgresConnection) async throws {
        guard !postings.isEmpty else { return }
        let rows = try await connection.query(
            """
            INSERT INTO credit_ledger (operation_key, bucket, delta, reason)
            SELECT * FROM unnest(\(postings.map(\.operationKey))::text[], \(postings.map(\.bucket))::text[],
                \(postings.map(\.delta))::bigint[], \(postings.map(\.reason))::text[])
            ON CONFLICT (operation_key) DO NOTHING RETURNING operation_key
            """, logger: logger)
        for try await key in rows.decode(String.self) {
            Counter(label: "storekeeper_credit_operations_total", dimensions: [("operation", String(key.prefix { $0 != ":" }))]).increment()
        }
    }
}
