import Analytics
import Foundation

/// `STOREKEEPER_CURRENCY_RATES`: the path of a YAML file, or the YAML (or JSON) itself, giving the currency analytics
/// reports money in and what one unit of each other currency is worth in it:
///
/// ```yaml
/// reporting: USD
/// rates:            # units of USD per unit of each currency
///   EUR: 1.08
///   GBP: 1.27
///   JPY: 0.0067
/// ```
///
/// A currency without a rate is never guessed: charts name it and leave it out of their totals.
enum CurrencyRatesConfiguration {
    struct File: Decodable {
        var reporting: String
        /// Read as binary numbers, then written as the shortest decimal that reads back the same (`1.08` stays 1.08):
        /// a number `Decimal` cannot hold (1e-300) is then refused by the range check, not by a decoding error.
        var rates: [String: Double]?
    }

    /// The range a rate may take: a million to one either way.
    static let range: ClosedRange<Double> = 0.000_001...1_000_000

    static func rates(from value: String) throws(ConfigurationError) -> CurrencyRates {
        let place = "STOREKEEPER_CURRENCY_RATES"
        let file = try YAMLSetting.decode(File.self, from: value, place: place, keys: .currencyRates)
        var problems: [String] = []
        if !CurrencyRates.isCurrencyCode(file.reporting) { problems.append("\(place): reporting must be an ISO 4217 code such as USD") }
        var rates: [String: Decimal] = [:]
        for (code, rate) in (file.rates ?? [:]).sorted(by: { $0.key < $1.key }) {
            let shown = printable(code)
            if !CurrencyRates.isCurrencyCode(code) {
                problems.append("\(place): rates.\(shown) is not an ISO 4217 code")
                continue
            }
            if code.uppercased() == file.reporting.uppercased() {
                // One unit of the reporting currency is worth one: any other figure is a mistake in the file.
                if rate != 1 { problems.append("\(place): rates.\(shown) is the reporting currency, worth 1 of itself; leave it out") }
                continue
            }
            guard range.contains(rate), let decimal = Decimal(string: "\(rate)", locale: Locale(identifier: "en_US_POSIX")) else {
                problems.append("\(place): rates.\(shown) must be a number from 0.000001 to 1000000")
                continue
            }
            rates[code] = decimal
        }
        guard problems.isEmpty else { throw ConfigurationError(problems: problems) }
        return CurrencyRates(reporting: file.reporting, rates: rates)
    }

    /// At most 16 characters of `text` for a message, anything but printable ASCII shown as `?`.
    static func printable(_ text: String) -> String {
        String(String.UnicodeScalarView(text.unicodeScalars.prefix(16).map { (0x20..<0x7F).contains($0.value) ? $0 : "?" }))
    }
}
