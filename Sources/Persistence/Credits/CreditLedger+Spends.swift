import Credits
import Foundation
import PostgresNIO
import Subscriptions

// The statements of a group of spends (see SpendCredits): each reads or writes every account of the group at once
// (the group's locks are taken with its stored answers: UsageRequests.lockAccountsAndReadAnswers).
extension CreditLedger {
    /// What one account has to spend: its subscriptions, its credits, its live buckets in spend order, and the grants
    /// due by the clock that were written for it first (their events are the spend's to send).
    public struct Spendable: Sendable {
        public var subscriptions: [SubscriptionState]
        public var credits: AccountCredits
        public var live: [AccountCredits.LiveBalance]
        public var granted: [LedgerOperation]
    }

    /// What each of `accounts` has to spend at `now` (the accounts locked), in one read (``spendInputs(of:at:on:)``);
    /// an account with grants due by the clock has them written first and its buckets read again.
    public func spendableCredits(of accounts: [AccountID], now: Date, on connection: PostgresConnection) async throws -> [AccountID: Spendable] {
        try await spendableCredits(of: accounts, inputs: try await spendInputs(of: accounts, at: now, on: connection), now: now, on: connection)
    }

    /// What each of `accounts` has to spend at `now`, from status inputs read already under their locks (a hold
    /// group's first statement reads them with the locks, sql/0040); grants due are written first, as above.
    public func spendableCredits(
        of accounts: [AccountID], inputs: [AccountID: StatusInputs], now: Date, on connection: PostgresConnection
    ) async throws -> [AccountID: Spendable] {
        var result: [AccountID: Spendable] = [:]
        for account in Set(accounts) {
            let states = inputs[account]?.subscriptions ?? []
            var live = inputs[account]?.buckets ?? []
            let records = inputs[account]?.records ?? []
            let due = AccountCredits.grantsDue(account: account, subscriptions: states, records: records, catalogue: catalogue, live: live, now: now)
            if !due.isEmpty {
                try await apply(due, at: now, on: connection)
                live = try await liveBuckets(of: [account], at: now, on: connection)[account] ?? []
            }
            let credits = AccountCredits.evaluate(subscriptions: states, records: records, catalogue: catalogue, live: live, now: now)
            result[account] = Spendable(subscriptions: states, credits: credits, live: live, granted: due)
        }
        return result
    }
}
