import Entitlements
import Foundation

/// A UTC calendar day, as the number of days since 1970-01-01.
public struct AnalyticsDay: Hashable, Comparable, Sendable, Codable, CustomStringConvertible {
    public var number: Int32

    public init(number: Int32) { self.number = number }

    /// The UTC day `date` falls in.
    public init(_ date: Date) { number = Int32(clamping: Int64((date.timeIntervalSince1970 / 86_400).rounded(.down))) }

    /// The day's first instant.
    public var start: Date { Date(timeIntervalSince1970: TimeInterval(number) * 86_400) }

    /// `yyyy-MM-dd`.
    public var description: String {
        let components = AnalyticsCalendar.utc.dateComponents([.year, .month, .day], from: start)
        return String(format: "%04d-%02d-%02d", components.year!, components.month!, components.day!)
    }

    /// A `yyyy-MM-dd` day, or `nil`.
    public init?(_ text: String) {
        guard text.utf8.count == 10, let match = text.wholeMatch(of: /(\d{4})-(\d{2})-(\d{2})/),
            let year = Int(match.output.1), let month = Int(match.output.2), let day = Int(match.output.3),
            let date = AnalyticsCalendar.utc.date(from: DateComponents(year: year, month: month, day: day)),
            AnalyticsCalendar.utc.dateComponents([.year, .month, .day], from: date) == DateComponents(year: year, month: month, day: day)
        else { return nil }
        self.init(date)
    }

    public static func < (lhs: AnalyticsDay, rhs: AnalyticsDay) -> Bool { lhs.number < rhs.number }
    public func adding(days: Int32) -> AnalyticsDay { AnalyticsDay(number: number + days) }
}

/// The Gregorian calendar in UTC, which every analytics day, week and month is counted in.
public enum AnalyticsCalendar {
    public static let utc: Calendar = {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "UTC")!
        return calendar
    }()
}

/// Where an entry is counted: its day, measure and dimensions.
public struct AnalyticsKey: Hashable, Sendable {
    public var day: AnalyticsDay
    public var measure: AnalyticsMeasure
    public var store: Store
    /// `production` or `sandbox`; `nil` for credit usage, which is counted for no store and no environment (stored
    /// as '').
    public var environment: StoreEnvironment.Rollup?
    public var product: String
    /// ISO 4217 for money; empty for counts.
    public var currency: String

    public init(
        day: AnalyticsDay, measure: AnalyticsMeasure, store: Store, environment: StoreEnvironment.Rollup?, product: String, currency: String = ""
    ) {
        self.day = day
        self.measure = measure
        self.store = store
        self.environment = environment
        self.product = product
        self.currency = currency
    }
}

/// What one subscription adds to the rollups: a value per key. Derived again on every change to the subscription;
/// the rollups change by the difference from what it added before (``difference(from:)``).
public struct AnalyticsContribution: Equatable, Sendable {
    public private(set) var values: [AnalyticsKey: Int64] = [:]

    public init() {}

    public init(values: [AnalyticsKey: Int64]) { self.values = values.filter { $0.value != 0 } }

    /// Adds `value` at `key` (a zero sum drops the key).
    public mutating func add(_ value: Int64, at key: AnalyticsKey) {
        guard value != 0 else { return }
        let sum = values[key, default: 0] &+ value
        values[key] = sum == 0 ? nil : sum
    }

    /// What the rollups must add to go from `old` to this contribution.
    public func difference(from old: AnalyticsContribution) -> AnalyticsContribution {
        var difference = self
        for (key, value) in old.values { difference.add(-value, at: key) }
        return difference
    }

    public var isEmpty: Bool { values.isEmpty }
}
