/// Which `warn_at` thresholds of a meter a spend or a hold crossed: the remaining balance went from above a threshold
/// to at or below it. Crossing upward (a top-up, a release, a new window) says nothing; the next crossing downward
/// in the same window is not told again (the event's key names the window).
public enum CreditWarnings {
    /// A threshold crossed, in credits.
    public struct Crossing: Equatable, Sendable {
        public var threshold: WarningThreshold
        public var credits: Int64
        /// The meter spent out, as written (`0`): `credits.exhausted` rather than `credits.low`. A share that rounds
        /// to 0 credits is still a `credits.low`.
        public var exhausted: Bool { threshold == .credits(0) }
    }

    /// The thresholds in `thresholds` that `before → after` crossed downward; none for an unlimited meter or a
    /// balance that did not fall. `isTrial`: the account's window is a free trial's (a share is of `trial_cap`).
    public static func crossed(
        _ thresholds: [WarningThreshold], allowance: Allowance?, isTrial: Bool = false, before: Int64, after: Int64
    ) -> [Crossing] {
        guard after < before, allowance?.isUnlimited != true else { return [] }
        var seen = Set<String>()
        return thresholds.compactMap { threshold in
            guard let credits = threshold.credits(of: allowance, isTrial: isTrial), before > credits, after <= credits else { return nil }
            let crossing = Crossing(threshold: threshold, credits: credits)
            return seen.insert("\(crossing.exhausted ? "exhausted" : "low"):\(credits)").inserted ? crossing : nil
        }
    }
}
