/// A product's billing period from its ISO 8601 duration (`P1W`, `P1M`, `P3M`, `P6M`, `P1Y`).
public struct BillingPeriod: Sendable, Equatable {
    public var months: Int
    public var days: Int

    public init?(iso8601 text: String) {
        guard text.hasPrefix("P"), text.count >= 3, let count = Int(text.dropFirst().dropLast()), count > 0 else { return nil }
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
