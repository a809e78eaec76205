import Foundation

/// How a chart's days are grouped: each day, ISO weeks (Monday first) or calendar months, in UTC.
public enum AnalyticsInterval: String, Sendable, CaseIterable {
    case day, week, month
}

/// The charts `GET /admin/analytics/{metric}` answers, each drawn from the rollups' daily sums. `docs/analytics.md`
/// defines every series.
public enum AnalyticsMetric: String, Sendable, CaseIterable {
    case actives, mrr, trials
    case trialConversion = "trial-conversion"
    case revenue
    case newCustomers = "new-customers"
    case churn
    case refundRate = "refund-rate"
    case billingRecoveries = "billing-recoveries"
    case usage

    /// The measures the chart reads.
    public var measures: [AnalyticsMeasure] {
        switch self {
        case .actives: return [.activeSubscriptions, .activeTrials]
        case .mrr: return [.mrr]
        case .trials: return [.newTrials, .trialConversions, .activeTrials]
        case .trialConversion: return [.newTrials, .trialCohortConversions]
        case .revenue: return [.revenueGross, .refunds]
        case .newCustomers: return [.newCustomers]
        case .churn: return [.churned, .activeSubscriptions, .resubscriptions]
        case .refundRate: return [.refundedTransactions, .transactions]
        case .billingRecoveries: return [.billingRecoveries]
        case .usage: return [.creditsSpent, .creditsGranted]
        }
    }

    public static let list = allCases.map(\.rawValue).joined(separator: ", ")
}

/// One series of the rollups' sums: a measure in one currency (money) — for usage, one meter of one tier.
public struct AnalyticsSeriesKey: Hashable, Sendable {
    public var measure: AnalyticsMeasure
    /// The currency of money; the meter of usage; empty otherwise.
    public var currency: String
    /// The tier of usage; empty otherwise.
    public var tier: String

    public init(measure: AnalyticsMeasure, currency: String = "", tier: String = "") {
        self.measure = measure
        self.currency = currency
        self.tier = tier
    }
}

/// The daily sums a chart is drawn from, as the rollups answer them for its filters.
public struct AnalyticsSums: Sendable {
    /// Each level series' sum over every day before the chart's first: its value when the chart begins.
    public var before: [AnalyticsSeriesKey: Int64]
    /// Each series' sum on each day of the chart.
    public var days: [AnalyticsSeriesKey: [AnalyticsDay: Int64]]

    public init(before: [AnalyticsSeriesKey: Int64] = [:], days: [AnalyticsSeriesKey: [AnalyticsDay: Int64]] = [:]) {
        self.before = before
        self.days = days
    }
}

/// A chart: its series, one point per interval from `from` to `to` (both included).
public struct AnalyticsChart: Sendable, Equatable {
    public var metric: AnalyticsMetric
    public var interval: AnalyticsInterval
    public var from: AnalyticsDay
    public var to: AnalyticsDay
    public var series: [Series]
    /// Currencies holding money in the chart with no rate in `STOREKEEPER_CURRENCY_RATES`: left out of the totals.
    public var missingRates: [String]
    /// The currency of the `…_total` series, when rates are configured.
    public var reportingCurrency: String?

    public struct Series: Sendable, Equatable {
        public var name: String
        /// `count`, `milliunits` (of ``currency``) or `ratio`.
        public var unit: String
        public var currency: String?
        public var meter: String?
        public var tier: String?
        public var points: [Point]
    }

    /// A point: the interval's first day (the chart's first day for the first interval) and its value; `nil` for a
    /// ratio of nothing (no trials started, no active subscriptions at the start).
    public struct Point: Sendable, Equatable {
        public var date: AnalyticsDay
        public var value: Double?
    }

    /// The intervals from `from` to `to`: each one's first and last day, clipped to the range.
    public static func buckets(from: AnalyticsDay, to: AnalyticsDay, interval: AnalyticsInterval) -> [(first: AnalyticsDay, last: AnalyticsDay)] {
        var buckets: [(AnalyticsDay, AnalyticsDay)] = []
        var first = from
        while first <= to {
            let next: AnalyticsDay
            switch interval {
            case .day: next = first.adding(days: 1)
            case .week:
                // 1970-01-01 was a Thursday: day numbers + 3 count from a Monday.
                let weekday = Int32((Int(first.number) + 3) % 7 + 7) % 7
                next = first.adding(days: 7 - weekday)
            case .month:
                let components = AnalyticsCalendar.utc.dateComponents([.year, .month], from: first.start)
                let start = AnalyticsCalendar.utc.date(from: components)!
                next = AnalyticsDay(AnalyticsCalendar.utc.date(byAdding: .month, value: 1, to: start)!)
            }
            buckets.append((first, min(next.adding(days: -1), to)))
            first = next
        }
        return buckets
    }

    /// Draws `metric` from `sums`.
    public static func draw(
        _ metric: AnalyticsMetric, from: AnalyticsDay, to: AnalyticsDay, interval: AnalyticsInterval, sums: AnalyticsSums, rates: CurrencyRates?
    ) -> AnalyticsChart {
        let buckets = Self.buckets(from: from, to: to, interval: interval)
        let drawing = Drawing(buckets: buckets, sums: sums)
        var chart = AnalyticsChart(
            metric: metric, interval: interval, from: from, to: to, series: [], missingRates: [], reportingCurrency: rates?.reporting)
        func count(_ name: String, _ values: [Double?]) -> Series { Series(name: name, unit: "count", points: drawing.points(values)) }
        func ratio(_ name: String, _ numerator: [Double?], _ denominator: [Double?]) -> Series {
            Series(
                name: name, unit: "ratio",
                points: drawing.points(
                    zip(numerator, denominator).map { top, bottom in
                        guard let top, let bottom, bottom != 0 else { return nil }
                        return top / bottom
                    }))
        }
        switch metric {
        case .actives:
            chart.series = [
                count("active_subscriptions", drawing.level(.init(measure: .activeSubscriptions))),
                count("active_trials", drawing.level(.init(measure: .activeTrials))),
            ]
        case .mrr:
            chart.addMoney([("mrr", .mrr)], drawing: drawing, rates: rates)
        case .trials:
            chart.series = [
                count("new_trials", drawing.flow(.init(measure: .newTrials))),
                count("trial_conversions", drawing.flow(.init(measure: .trialConversions))),
                count("active_trials", drawing.level(.init(measure: .activeTrials))),
            ]
        case .trialConversion:
            let started = drawing.flow(.init(measure: .newTrials))
            let converted = drawing.flow(.init(measure: .trialCohortConversions))
            chart.series = [count("trials_started", started), count("converted", converted), ratio("conversion_rate", converted, started)]
        case .revenue:
            chart.addMoney([("gross", .revenueGross), ("refunds", .refunds)], net: true, drawing: drawing, rates: rates)
        case .newCustomers:
            chart.series = [count("new_customers", drawing.flow(.init(measure: .newCustomers)))]
        case .churn:
            let churned = drawing.flow(.init(measure: .churned))
            let atStart = drawing.levelBefore(.init(measure: .activeSubscriptions))
            chart.series = [
                count("churned", churned), count("active_at_start", atStart), ratio("churn_rate", churned, atStart),
                count("resubscriptions", drawing.flow(.init(measure: .resubscriptions))),
            ]
        case .refundRate:
            let refunded = drawing.flow(.init(measure: .refundedTransactions))
            let all = drawing.flow(.init(measure: .transactions))
            chart.series = [count("refunded_transactions", refunded), count("transactions", all), ratio("refund_rate", refunded, all)]
        case .billingRecoveries:
            chart.series = [count("billing_recoveries", drawing.flow(.init(measure: .billingRecoveries)))]
        case .usage:
            let pairs = Set(sums.days.keys.filter { $0.measure == .creditsSpent || $0.measure == .creditsGranted }.map { [$0.tier, $0.currency] })
            // Nothing spent or granted: the chart still has its series, at 0, so a reader sees "none", not "no chart".
            if pairs.isEmpty {
                let zeros = [Double?](repeating: 0, count: drawing.buckets.count)
                chart.series = [count("credits_spent", zeros), count("credits_granted", zeros), ratio("allowance_used", zeros, zeros)]
            }
            for pair in pairs.sorted(by: { $0.lexicographicallyPrecedes($1) }) {
                let (tier, meter) = (pair[0], pair[1])
                let spent = drawing.flow(.init(measure: .creditsSpent, currency: meter, tier: tier))
                let granted = drawing.flow(.init(measure: .creditsGranted, currency: meter, tier: tier))
                for var series in [count("credits_spent", spent), count("credits_granted", granted), ratio("allowance_used", spent, granted)] {
                    (series.meter, series.tier) = (meter, tier.isEmpty ? "free" : tier)
                    chart.series.append(series)
                }
            }
        }
        return chart
    }

    /// Money series: one per currency held, then (with rates) each converted and summed into `…_total`.
    private mutating func addMoney(
        _ parts: [(name: String, measure: AnalyticsMeasure)], net: Bool = false, drawing: Drawing, rates: CurrencyRates?
    ) {
        let measures = Set(parts.map(\.measure))
        let currencies = Set(drawing.sums.days.keys.filter { measures.contains($0.measure) }.map(\.currency))
            .union(drawing.sums.before.keys.filter { measures.contains($0.measure) }.map(\.currency)).sorted()
        var totals: [String: [Int64]] = [:]
        var missing: Set<String> = []
        for currency in currencies {
            var values: [(String, [Int64])] = parts.map { part in
                let key = AnalyticsSeriesKey(measure: part.measure, currency: currency)
                return (part.name, part.measure.isLevel ? drawing.levelValues(key) : drawing.flowValues(key))
            }
            if net { values.append(("net", zip(values[0].1, values[1].1).map { $0 - $1 })) }
            for (name, amounts) in values {
                series.append(Series(name: name, unit: "milliunits", currency: currency, points: drawing.points(amounts.map(Double.init))))
                guard let rates else { continue }
                let converted = amounts.map { rates.convert($0, from: currency) }
                if converted.contains(nil) {
                    if amounts.contains(where: { $0 != 0 }) { missing.insert(currency) }
                    continue
                }
                totals[name, default: Array(repeating: 0, count: amounts.count)] = zip(
                    totals[name] ?? Array(repeating: 0, count: amounts.count), converted
                )
                .map { $0 + $1! }
            }
        }
        // No money held at all: each series once, at 0 and in no currency, so the chart is not empty.
        if currencies.isEmpty, rates == nil {
            for name in parts.map(\.name) + (net ? ["net"] : []) {
                series.append(Series(name: name, unit: "milliunits", points: drawing.points(Array(repeating: 0, count: drawing.buckets.count))))
            }
        }
        if let rates {
            for name in parts.map(\.name) + (net ? ["net"] : []) {
                let amounts = totals[name] ?? Array(repeating: 0, count: drawing.buckets.count)
                series.append(
                    Series(name: name + "_total", unit: "milliunits", currency: rates.reporting, points: drawing.points(amounts.map(Double.init))))
            }
        }
        missingRates = missing.sorted()
    }

    /// Sums read per interval.
    struct Drawing {
        var buckets: [(first: AnalyticsDay, last: AnalyticsDay)]
        var sums: AnalyticsSums

        func points(_ values: [Double?]) -> [Point] { zip(buckets, values).map { Point(date: $0.0.first, value: $0.1) } }

        /// A level at the end of each interval.
        func levelValues(_ key: AnalyticsSeriesKey) -> [Int64] {
            var running = sums.before[key] ?? 0
            let days = sums.days[key] ?? [:]
            return buckets.map { bucket in
                for number in bucket.first.number...bucket.last.number { running += days[AnalyticsDay(number: number)] ?? 0 }
                return running
            }
        }

        /// What happened in each interval.
        func flowValues(_ key: AnalyticsSeriesKey) -> [Int64] {
            let days = sums.days[key] ?? [:]
            return buckets.map { bucket in (bucket.first.number...bucket.last.number).reduce(0) { $0 + (days[AnalyticsDay(number: $1)] ?? 0) } }
        }

        func level(_ key: AnalyticsSeriesKey) -> [Double?] { levelValues(key).map(Double.init) }
        func flow(_ key: AnalyticsSeriesKey) -> [Double?] { flowValues(key).map(Double.init) }

        /// A level at the start of each interval: at the end of the day before it.
        func levelBefore(_ key: AnalyticsSeriesKey) -> [Double?] {
            let atEnd = levelValues(key)
            let flows = flowValues(key)
            return zip(atEnd, flows).map { Double($0 - $1) }
        }
    }
}
