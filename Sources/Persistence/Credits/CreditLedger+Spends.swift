import Credits
import Foundation
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
                live[account] = try await liveBuckets(of: [account], at: now, on: connection)[account]
            }
            let balances = live[account] ?? []
            result[account] = (AccountCredits.evaluate(subscriptions: states, catalogue: catalogue, live: balances, now: now), balances)
        }
        return result
    }
}
