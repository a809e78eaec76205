import Foundation

/// `STOREKEEPER_CURRENCY_RATES`: the reporting currency and what one unit of each other currency is worth in it. Money
/// in a currency without a rate is left out of the converted totals and named in the answer — never guessed.
public struct CurrencyRates: Sendable, Equatable {
    public var reporting: String
    /// Units of ``reporting`` per unit of each currency (ISO 4217, upper case).
    public var rates: [String: Decimal]

    public init(reporting: String, rates: [String: Decimal]) {
        self.reporting = reporting.uppercased()
        var rates = Dictionary(uniqueKeysWithValues: rates.map { ($0.key.uppercased(), $0.value) })
        rates[self.reporting] = 1
        self.rates = rates
    }

    /// `amount` milliunits of `currency` in the reporting currency's milliunits, to the nearest; `nil` without a rate.
    public func convert(_ amount: Int64, from currency: String) -> Int64? {
        guard let rate = rates[currency.uppercased()] else { return nil }
        var product = Decimal(amount) * rate
        var rounded = Decimal()
        NSDecimalRound(&rounded, &product, 0, .plain)
        return NSDecimalNumber(decimal: rounded).int64Value
    }

    /// Whether `code` looks like an ISO 4217 code: three ASCII letters.
    public static func isCurrencyCode(_ code: String) -> Bool {
        code.utf8.count == 3 && code.unicodeScalars.allSatisfy { ("A"..."Z").contains($0) || ("a"..."z").contains($0) }
    }
}
