import Credits
import Foundation
import PostgresNIO
import Subscriptions

// The statements of a group of spends (see SpendCredits): each reads or writes every account of the group at once
// (the group's locks are taken with its stored answers: UsageRequests.lockAccountsAndReadAnswers).
extension CreditLedger {
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
