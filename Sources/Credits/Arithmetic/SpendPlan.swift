/// How a spend is taken from an account's balances: in the order given (cycle buckets, soonest end first, then
/// top-ups), never more than a bucket holds.
public struct SpendPlan: Sendable, Equatable {
    /// `(bucket, amount)` pairs to debit.
    public var debits: [(bucket: String, amount: Int64)]

    public static func == (lhs: SpendPlan, rhs: SpendPlan) -> Bool {
        lhs.debits.map(\.bucket) == rhs.debits.map(\.bucket) && lhs.debits.map(\.amount) == rhs.debits.map(\.amount)
    }

    /// The plan for `amount` out of `balances`, or nil when they hold less than `amount` (nothing is taken then).
    public static func plan(amount: Int64, from balances: [(bucket: String, balance: Int64)]) -> SpendPlan? {
        guard amount > 0 else { return nil }
        var left = amount
        var debits: [(bucket: String, amount: Int64)] = []
        for (bucket, balance) in balances where balance > 0 && left > 0 {
            let take = min(balance, left)
            debits.append((bucket, take))
            left -= take
        }
        return left == 0 ? SpendPlan(debits: debits) : nil
    }
}
