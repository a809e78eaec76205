/// What spending an amount of one meter does to an account's live balances (in spend order), as the spend sees them
/// — after any earlier spend of its group.
public enum Spending: Sendable, Equatable {
    /// The meter is unlimited: nothing is taken.
    case unlimited
    /// Taken by `plan`; `remaining` of the meter is left, and `after` are the balances once debited.
    case spent(plan: SpendPlan, remaining: Int64, after: [AccountCredits.LiveBalance])
    /// Less than the amount is left (`available`): nothing is taken.
    case insufficient(available: Int64)

    public static func spend(
        _ amount: Int64, of meter: String, unlimited: Bool, from live: [AccountCredits.LiveBalance]
    ) -> Spending {
        if unlimited { return .unlimited }
        let buckets = live.filter { $0.bucket.meter == meter }
        let available = buckets.reduce(0) { $0 + max($1.balance, 0) }
        guard let plan = SpendPlan.plan(amount: amount, from: buckets.map { ($0.bucket.key, $0.balance) }) else {
            return .insufficient(available: available)
        }
        let after = live.map { balance in
            var balance = balance
            balance.balance -= plan.debits.filter { $0.bucket == balance.bucket.key }.reduce(0) { $0 + $1.amount }
            return balance
        }
        return .spent(plan: plan, remaining: available - amount, after: after)
    }
}
