/// Stripe amounts are integers in the currency's smallest unit (cents for USD, yen for JPY, fils for KWD); the
/// catalogue counts milliunits. Stripe's documented lists of zero- and three-decimal currencies decide the factor.
public enum StripeAmount {
    static let zeroDecimal: Set<String> = [
        "bif", "clp", "djf", "gnf", "jpy", "kmf", "krw", "mga", "pyg", "rwf", "ugx", "vnd", "vuv", "xaf", "xof", "xpf",
    ]
    static let threeDecimal: Set<String> = ["bhd", "jod", "kwd", "omr", "tnd"]

    /// `amount` in milliunits of `currency`.
    public static func milliunits(_ amount: Int64, currency: String) -> Int64 {
        let currency = currency.lowercased()
        let factor: Int64 = zeroDecimal.contains(currency) ? 1000 : threeDecimal.contains(currency) ? 1 : 10
        let (product, overflow) = amount.multipliedReportingOverflow(by: factor)
        return overflow ? (amount < 0 ? .min : .max) : product
    }

    /// `milliunits` of `currency` in its smallest unit (rounded down).
    public static func minorUnits(milliunits: Int64, currency: String) -> Int64 {
        let currency = currency.lowercased()
        return zeroDecimal.contains(currency) ? milliunits / 1000 : threeDecimal.contains(currency) ? milliunits : milliunits / 10
    }

    /// A price's amount in the smallest unit from Stripe's decimal string (`"999"`, `"999.5"`), rounded.
    public static func minorUnits(decimal: String) -> Int64? {
        guard let value = Double(decimal), value.isFinite, abs(value) < 9e15 else { return nil }
        return Int64(value.rounded())
    }
}
