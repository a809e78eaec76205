import Credits
import Foundation
import PostgresNIO
import Subscriptions

extension CreditLedger {
    /// An account's credits at `now` for spending (the account locked): every grant due by the clock is written
    /// first. Returns its live buckets too, in spend order, so the spend needs no second read.
    public func spendableCredits(
        of account: AccountID, subscriptions: [SubscriptionState], now: Date, on connection: PostgresConnection
    ) async throws -> (credits: AccountCredits, live: [AccountCredits.LiveBalance]) {
        var live = try await liveBuckets(of: account, meter: nil, at: now, on: connection)
        let due = AccountCredits.grantsDue(account: account, subscriptions: subscriptions, catalogue: catalogue, live: live, now: now)
        if !due.isEmpty {
            try await apply(due, on: connection)
            live = try await liveBuckets(of: account, meter: nil, at: now, on: connection)
        }
        return (AccountCredits.evaluate(subscriptions: subscriptions, catalogue: catalogue, live: live, now: now), live)
    }
}
