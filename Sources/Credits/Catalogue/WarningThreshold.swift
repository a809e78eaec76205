/// A remaining balance of a meter at which the app is told it runs low (`warn_at` of a meter in the catalogue).
///
/// Written as a number: below 1 it is a share of the tier's allowance (`0.2`: a fifth of `per_cycle`, or of
/// `per_day`), a whole number of 1 or more is credits, and `0` is the meter spent out (`credits.exhausted`).
public enum WarningThreshold: Codable, Hashable, Sendable {
    /// A share of the allowance, strictly between 0 and 1.
    case share(Double)
    /// A number of credits; 0 is exhaustion.
    case credits(Int64)
    /// Neither (negative, a fraction above 1, not a number), as written: refused at start (``TierCatalogue/problems()``).
    case unknown(String)

    public init(_ value: Double) {
        if value == 0 {
            self = .credits(0)
        } else if value > 0, value < 1 {
            self = .share(value)
        } else if value >= 1, value <= Double(Int64.max / 2), value.rounded() == value {
            self = .credits(Int64(value))
        } else {
            self = .unknown(value.rounded() == value && abs(value) < 1e15 ? String(Int64(value)) : String(value))
        }
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if let value = try? container.decode(Double.self) {
            self.init(value)
        } else {
            // Said at start with the meter's name, as every other problem of the catalogue is.
            self = .unknown((try? container.decode(String.self)).map { "\"\($0)\"" } ?? "a value that is not a number")
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        switch self {
        case .share(let share): try container.encode(share)
        case .credits(let credits): try container.encode(credits)
        case .unknown(let text): try container.encode(text)
        }
    }

    /// The balance at or below which the meter counts as low, in credits: a share of what a window grants
    /// (`per_cycle`, capped by `trial_cap` during a free trial, else `per_day`) rounds down — remaining ≤ 6 is at or
    /// below a fifth of 33; `nil` for a share of a meter the tier grants no counted allowance of.
    public func credits(of allowance: Allowance?, isTrial: Bool = false) -> Int64? {
        switch self {
        case .credits(let credits):
            return credits
        case .share(let share):
            guard let granted = allowance?.cycleGrant(isTrial: isTrial) ?? allowance?.perDay else { return nil }
            // A share written in decimal is not exact in binary (0.29 × 100 = 28.999…): a billionth's tolerance
            // keeps it at 29.
            return Int64((share * Double(granted) + 1e-9).rounded(.down))
        case .unknown:
            return nil
        }
    }
}
