/// Integer credit arithmetic (SPEC §7): floor every grant, ceil every clawback, no floating point.
public enum Proration {
    /// The cycle grant after an immediate upgrade: `floor(allowance × ratio)` with
    /// `ratio = (newPrice − oldPrice × remaining / cycle) / newPrice` clamped to [0, 1] — the share of the new price
    /// the customer effectively pays after Apple's pro-rata refund of the old period.
    /// - Parameters: prices in milliunits; `remaining` and `cycle` in milliseconds.
    public static func upgradeGrant(allowance: Int64, newPrice: Int64, oldPrice: Int64, remaining: Int64, cycle: Int64) -> Int64 {
        guard allowance > 0, newPrice > 0, cycle > 0 else { return 0 }
        let remaining = Int128(min(max(remaining, 0), cycle))
        // ratio = (newPrice × cycle − oldPrice × remaining) / (newPrice × cycle), in 128 bits so no product overflows
        let denominator = Int128(newPrice) * Int128(cycle)
        let numerator = max(0, denominator - Int128(max(oldPrice, 0)) * remaining)
        return Int64(Int128(allowance) * numerator / denominator)
    }

    /// A prorated refund's clawback: `ceil(granted × milliPercent / 100 000)`, at most `granted`.
    public static func clawback(granted: Int64, milliPercent: Int32) -> Int64 {
        guard granted > 0, milliPercent > 0 else { return 0 }
        let share = (Int128(granted) * Int128(milliPercent) + 99_999) / 100_000
        return Int64(min(Int128(granted), share))
    }
}
