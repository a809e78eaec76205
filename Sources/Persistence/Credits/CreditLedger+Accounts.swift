import Credits
import Foundation
import PostgresNIO
import Subscriptions

extension CreditLedger {
    /// An account's credits at `now`. With `materialize` (spending; account locked) every grant due by the clock is
    /// written first; without it (status reads) due grants not written yet are counted as if they were, and nothing
    /// is written — looking at an account never adds ledger rows.
    public func credits(
        of account: AccountID, subscriptions: [SubscriptionState], now: Date, materialize: Bool, on connection: PostgresConnection
    ) async throws -> AccountCredits {
        var live = try await liveBuckets(of: account, meter: nil, at: now, on: connection)
        let due = AccountCredits.grantsDue(account: account, subscriptions: subscriptions, catalogue: catalogue, live: live, now: now)
        if materialize, !due.isEmpty {
            try await apply(due, on: connection)
            live = try await liveBuckets(of: account, meter: nil, at: now, on: connection)
        }
        return AccountCredits.evaluate(
            subscriptions: subscriptions, catalogue: catalogue, live: live, pending: materialize ? [] : due, now: now)
    }
}
