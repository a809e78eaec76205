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
        var rates: [String: Decimal]?
    }

    static func rates(from value: String) throws(ConfigurationError) -> CurrencyRates {
        let place = "STOREKEEPER_CURRENCY_RATES"
        let file = try YAMLSetting.decode(File.self, from: value, place: place, keys: .currencyRates)
        var problems: [String] = []
        if !CurrencyRates.isCurrencyCode(file.reporting) { problems.append("\(place): reporting must be an ISO 4217 code such as USD") }
        for (code, rate) in (file.rates ?? [:]).sorted(by: { $0.key < $1.key }) {
            if !CurrencyRates.isCurrencyCode(code) { problems.append("\(place): rates.\(code.prefix(16)) is not an ISO 4217 code") }
            if !(rate > 0 && rate < 1_000_000) { problems.append("\(place): rates.\(code.prefix(16)) must be a positive number below a million") }
        }
        guard problems.isEmpty else { throw ConfigurationError(problems: problems) }
        return CurrencyRates(reporting: file.reporting, rates: file.rates ?? [:])
    }
}
