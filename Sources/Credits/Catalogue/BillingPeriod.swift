/// A product's billing period from its ISO 8601 duration (`P1W`, `P1M`, `P3M`, `P6M`, `P1Y`).
public struct BillingPeriod: Sendable, Equatable {
    public var months: Int
    public var days: Int

    /// The longest count a duration may give, in its unit: far beyond any product or grant, and small enough that
    /// weeks and years in days and months never overflow (`P9223372036854775807W` is text an operator can send).
    public static let largestCount = 1_000_000

    public init?(iso8601 text: String) {
        guard text.hasPrefix("P"), text.count >= 3, let count = Int(text.dropFirst().dropLast()), (1...Self.largestCount).contains(count)
        else { return nil }
        switch text.last {
        case "D": (months, days) = (0, count)
        case "W": (months, days) = (0, 7 * count)
        case "M": (months, days) = (count, 0)
        case "Y": (months, days) = (12 * count, 0)
        default: return nil
        }
    }

    /// Periods of a year or more get their cycle credits monthly, on the anniversary day.
    public var resetsMonthly: Bool { months >= 12 }
}
