import Foundation

/// A period's price as a month's worth (MRR), in the price's milliunits: a week × 52/12, a month × 1, three months ÷ 3,
/// six ÷ 6, a year ÷ 12, a period of days × (365/12)/days; Apple's monthly-billed 12-month commitment is billed
/// monthly, so its monthly price counts as it is. Rounded to the nearest milliunit, halves away from zero.
public enum MonthlyValue {
    /// The length of a billing period in months and days (`P1W` is 0 months, 7 days).
    public struct Length: Equatable, Sendable {
        public var months: Int
        public var days: Int

        public init(months: Int, days: Int) {
            self.months = months
            self.days = days
        }
    }

    /// `price` for a period of `length`, as a month's worth.
    public static func of(_ price: Int64, length: Length) -> Int64 {
        if length.months > 0 { return divided(price, by: Int64(length.months)) }
        guard length.days > 0 else { return price }
        if length.days % 7 == 0 { return divided(price &* 52, by: Int64(12 * length.days / 7)) }
        return divided(price &* 365, by: Int64(12 * length.days))
    }

    /// The length a period of `duration` seconds most likely bills for, when the catalogue does not know its product:
    /// the nearest of a week, one, three and six months and a year.
    public static func likelyLength(of duration: TimeInterval) -> Length {
        let days = duration / 86_400
        let candidates: [(Double, Length)] = [
            (7, Length(months: 0, days: 7)), (30.44, Length(months: 1, days: 0)), (91.3, Length(months: 3, days: 0)),
            (182.6, Length(months: 6, days: 0)), (365.25, Length(months: 12, days: 0)),
        ]
        return candidates.min { abs(log($0.0 / max(days, 0.001))) < abs(log($1.0 / max(days, 0.001))) }!.1
    }

    /// `numerator ÷ denominator`, to the nearest integer, halves away from zero.
    static func divided(_ numerator: Int64, by denominator: Int64) -> Int64 {
        let (quotient, remainder) = numerator.quotientAndRemainder(dividingBy: denominator)
        guard remainder.magnitude * 2 >= denominator.magnitude else { return quotient }
        return quotient + (numerator < 0 ? -1 : 1)
    }
}
