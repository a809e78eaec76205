import Credits
import Foundation
import PostgresNIO
import Subscriptions

// The statements of a group of spends (see SpendCredits): each reads or writes every account of the group at once
// (the group's locks are taken with its stored answers: UsageRequests.lockAccountsAndReadAnswers).
extension CreditLedger {
    /// What each of `accounts` has to spend at `now` (the accounts locked): its subscriptions, its credits, and its
    /// live buckets in spend order, in one read (``statusInputs(of:at:orLater:on:)``); an account with grants due by
    /// the clock has them written first and its buckets read again.
    public func spendableCredits(of accounts: [AccountID], now: Date, on connection: PostgresConnection) async throws
        -> [AccountID: (subscriptions: [SubscriptionState], credits: AccountCredits, live: [AccountCredits.LiveBalance])]
    {
        let inputs = try await statusInputs(of: accounts, at: now, on: connection)
        var result: [AccountID: (subscriptions: [SubscriptionState], credits: AccountCredits, live: [AccountCredits.LiveBalance])] = [:]
        for account in Set(accounts) {
            let states = inputs[account]?.subscriptions ?? []
            var live = inputs[account]?.buckets ?? []
            let records = inputs[account]?.records ?? []
            let due = AccountCredits.grantsDue(account: account, subscriptions: states, records: records, catalogue: catalogue, live: live, now: now)
            if !due.isEmpty {
                try await apply(due, on: connection)
                live = try await liveBuckets(of: [account], at: now, on: connection)[account] ?? []
            }
            let credits = AccountCredits.evaluate(subscriptions: states, records: records, catalogue: catalogue, live: live, now: now)
            result[account] = (states, credits, live)
        }
        return result
    }
}
