/// Which `warn_at` thresholds of a meter a spend or a hold crossed: the remaining balance went from above a threshold
/// to at or below it. Crossing upward (a top-up, a release, a new window) says nothing; the next crossing downward
/// in the same window is not told again (the event's key names the window).
public enum CreditWarnings {
    /// A threshold crossed, in credits.
    public struct Crossing: Equatable, Sendable {
        public var threshold: WarningThreshold
        public var credits: Int64
        /// The meter spent out: `credits.exhausted` rather than `credits.low`.
        public var exhausted: Bool { credits == 0 }
    }

    /// The thresholds in `thresholds` that `before → after` crossed downward; none for an unlimited meter or a
    /// balance that did not fall.
    public static func crossed(_ thresholds: [WarningThreshold], allowance: Allowance?, before: Int64, after: Int64) -> [Crossing] {
        guard after < before, allowance?.isUnlimited != true else { return [] }
        var seen = Set<Int64>()
        return thresholds.compactMap { threshold in
            guard let credits = threshold.credits(of: allowance), before > credits, after <= credits, seen.insert(credits).inserted
            else { return nil }
            return Crossing(threshold: threshold, credits: credits)
        }
    }
}
