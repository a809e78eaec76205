import Analytics
import AppStoreModels
import Entitlements
import Foundation
import Subscriptions
import Testing

/// The analytics rules without a database: the issue's month factors, intervals, currency conversion, the chart's
/// levels and flows, and contributions that depend on the facts only.
@Suite("Analytics rules")
struct AnalyticsRulesTests {
    @Test("MRR factors, from the issue: P1W × 52/12, P1M × 1, P3M ÷ 3, P6M ÷ 6, P1Y ÷ 12, halves away from zero")
    func monthlyValues() {
        #expect(MonthlyValue.of(9990, length: .init(months: 0, days: 7)) == 43290)  // 9990 × 52 / 12 = 43290
        #expect(MonthlyValue.of(9990, length: .init(months: 1, days: 0)) == 9990)
        #expect(MonthlyValue.of(29990, length: .init(months: 3, days: 0)) == 9997)  // 9996.67
        #expect(MonthlyValue.of(59990, length: .init(months: 6, days: 0)) == 9998)  // 9998.33
        #expect(MonthlyValue.of(99990, length: .init(months: 12, days: 0)) == 8333)  // 8332.5
        #expect(MonthlyValue.of(3000, length: .init(months: 0, days: 14)) == 6500)  // 3000 × 52 / 24
        #expect(MonthlyValue.of(1000, length: .init(months: 0, days: 10)) == 3042)  // 1000 × 365 / 120 = 3041.67
        #expect(MonthlyValue.of(-99990, length: .init(months: 12, days: 0)) == -8333)
        #expect(MonthlyValue.likelyLength(of: 7 * 86_400) == .init(months: 0, days: 7))
        #expect(MonthlyValue.likelyLength(of: 28 * 86_400) == .init(months: 1, days: 0))
        #expect(MonthlyValue.likelyLength(of: 92 * 86_400) == .init(months: 3, days: 0))
        #expect(MonthlyValue.likelyLength(of: 366 * 86_400) == .init(months: 12, days: 0))
    }

    @Test("intervals: ISO weeks start on Monday, months on the 1st, both cut to the range; days parse strictly")
    func intervals() throws {
        let from = try #require(AnalyticsDay("2026-11-26"))
        let to = try #require(AnalyticsDay("2027-01-05"))
        let weeks = AnalyticsChart.buckets(from: from, to: to, interval: .week).map { "\($0.first)…\($0.last)" }
        #expect(weeks.prefix(2) == ["2026-11-26…2026-11-29", "2026-11-30…2026-12-06"])
        #expect(weeks.last == "2027-01-04…2027-01-05")
        let months = AnalyticsChart.buckets(from: from, to: to, interval: .month).map { "\($0.first)…\($0.last)" }
        #expect(months == ["2026-11-26…2026-11-30", "2026-12-01…2026-12-31", "2027-01-01…2027-01-05"])
        let leap = AnalyticsChart.buckets(
            from: try #require(AnalyticsDay("2028-02-01")), to: try #require(AnalyticsDay("2028-03-01")), interval: .month)
        #expect(leap.map(\.last.description) == ["2028-02-29", "2028-03-01"])
        for bad in ["2026-02-30", "2026-13-01", "2026-1-01", "26-11-26", "2026-11-26T00:00:00Z", ""] { #expect(AnalyticsDay(bad) == nil, "\(bad)") }
        #expect(AnalyticsDay(Date(timeIntervalSince1970: 86_400 - 0.001)).number == 0)
        #expect(AnalyticsDay(Date(timeIntervalSince1970: -0.5)).number == -1)
    }

    @Test("currency rates: converted to the nearest milliunit, the reporting currency at 1, a missing rate nil")
    func rates() {
        let rates = CurrencyRates(reporting: "usd", rates: ["eur": 1.1, "JPY": 0.0067])
        #expect(rates.convert(17990, from: "EUR") == 19789)
        #expect(rates.convert(1_500_000, from: "jpy") == 10050)
        #expect(rates.convert(12345, from: "USD") == 12345)
        #expect(rates.convert(100, from: "GBP") == nil)
        #expect(CurrencyRates.isCurrencyCode("EUR") && !CurrencyRates.isCurrencyCode("EURO") && !CurrencyRates.isCurrencyCode("€UR"))
    }

    @Test("a chart: levels carry what came before the range, flows do not; churn rate over the level at the interval's start")
    func drawing() throws {
        let day = { (text: String) in AnalyticsDay(text)! }
        let active = AnalyticsSeriesKey(measure: .activeSubscriptions)
        let churned = AnalyticsSeriesKey(measure: .churned)
        let sums = AnalyticsSums(
            before: [active: 10],
            days: [active: [day("2026-11-02"): 3, day("2026-11-09"): -2], churned: [day("2026-11-09"): 2, day("2026-11-20"): 1]])
        let chart = AnalyticsChart.draw(.churn, from: day("2026-11-01"), to: day("2026-11-21"), interval: .week, sums: sums, rates: nil)
        let series = Dictionary(uniqueKeysWithValues: chart.series.map { ($0.name, $0.points.map(\.value)) })
        // Weeks: Sun 1st (alone), 2nd–8th, 9th–15th, 16th–21st. Active at each start: 10, 10, 13, 11.
        #expect(series["active_at_start"] == [10, 10, 13, 11])
        #expect(series["churned"] == [0, 0, 2, 1])
        #expect(series["churn_rate"] == [0, 0, 2.0 / 13, 1.0 / 11])
        let actives = AnalyticsChart.draw(.actives, from: day("2026-11-01"), to: day("2026-11-21"), interval: .week, sums: sums, rates: nil)
        #expect(actives.series.first { $0.name == "active_subscriptions" }?.points.map(\.value) == [10, 13, 11, 11])
    }

    /// A monthly subscription: a week's trial, then `paid` months from `start`.
    static func derivation(periods count: Int, trial: Bool, refundAt: Date? = nil, shuffled: Bool = false) -> Lifecycle.Derivation {
        let start = Date(timeIntervalSince1970: 1_790_812_800)
        var periods: [PaidPeriod] = []
        var at = start
        if trial {
            periods.append(
                PaidPeriod(
                    key: "t", transactionId: "t", transactionIds: ["t"], productId: "pro.monthly", start: at, end: at + 7 * 86_400, price: 0,
                    offer: .init(type: .introductory, identifier: nil, discountType: .freeTrial, period: "P1W"), revocation: nil, signedAt: 0,
                    currency: "USD", charged: 0))
            at += 7 * 86_400
        }
        for index in 0..<count {
            periods.append(
                PaidPeriod(
                    key: "p\(index)", transactionId: "p\(index)", transactionIds: ["p\(index)"], productId: "pro.monthly", start: at,
                    end: at + 30 * 86_400, price: 9990, offer: nil,
                    revocation: index == count - 1 ? refundAt.map { .init(date: $0, type: "REFUND_FULL", milliPercent: nil) } : nil,
                    signedAt: 0, currency: "USD", charged: 9990))
            at += 30 * 86_400
        }
        let state = SubscriptionState(
            originalTransactionId: "1", accountId: nil, productId: "pro.monthly", environment: .production, status: .expired, willRenew: false,
            autoRenewProductId: nil, pendingProductId: nil, purchaseDate: nil, expiresAt: at, gracePeriodExpiresAt: nil, isTrial: false,
            ownership: .purchased, latestTransactionId: "p", lastEventType: .expired, lastEvent: EventPosition(signedDate: 0, eventId: ""),
            endReason: nil)
        return Lifecycle.Derivation(state: state, periods: shuffled ? periods.reversed() : periods, ends: [], accessEndsAt: nil)
    }

    @Test("a contribution depends on the periods, not their order; a renewal's difference moves the end and adds its revenue")
    func contributions() {
        let length: (String) -> MonthlyValue.Length? = { _ in .init(months: 1, days: 0) }
        let two = SubscriptionAnalytics.contribution(of: Self.derivation(periods: 2, trial: true), length: length)
        #expect(two == SubscriptionAnalytics.contribution(of: Self.derivation(periods: 2, trial: true, shuffled: true), length: length))
        let three = SubscriptionAnalytics.contribution(of: Self.derivation(periods: 3, trial: true), length: length)
        let renewal = three.difference(from: two)
        func total(_ contribution: AnalyticsContribution, _ measure: AnalyticsMeasure) -> Int64 {
            contribution.values.filter { $0.key.measure == measure }.reduce(0) { $0 + $1.value }
        }
        #expect(total(renewal, .revenueGross) == 9990 && total(renewal, .transactions) == 1)
        #expect(total(renewal, .activeSubscriptions) == 0 && total(renewal, .mrr) == 0, "a level's start and end both move, summing to 0")
        #expect(renewal.values.filter { $0.key.measure == .churned }.map(\.value).sorted() == [-1, 1], "the churn moves a month on")
        #expect(total(three, .newTrials) == 1 && total(three, .trialConversions) == 1 && total(three, .newCustomers) == 1)
        // A refund of the last period in force: its revenue stays on its day, the refund on the refund's, access ends then.
        let refundAt = Date(timeIntervalSince1970: 1_790_812_800 + 7 * 86_400 + 65 * 86_400)
        let refunded = SubscriptionAnalytics.contribution(of: Self.derivation(periods: 3, trial: true, refundAt: refundAt), length: length)
        #expect(total(refunded, .refunds) == 9990 && total(refunded, .refundedTransactions) == 1)
        let churn = refunded.values.first { $0.key.measure == .churned }
        #expect(churn?.key.day == AnalyticsDay(refundAt))
    }

    @Test("a monthly-billed 12-month commitment counts its monthly price as MRR, each month's charge as revenue")
    func commitmentMonths() {
        // The catalogue knows the product as a year: billed monthly, a month's price is still a month's worth.
        let length: (String) -> MonthlyValue.Length? = { _ in .init(months: 12, days: 0) }
        let start = Date(timeIntervalSince1970: 1_790_812_800)
        let periods = (0..<3).map { index in
            PaidPeriod(
                key: "m\(index)", transactionId: "m\(index)", transactionIds: ["m\(index)"], productId: "pro.annual",
                start: start + Double(index) * 30 * 86_400, end: start + Double(index + 1) * 30 * 86_400, price: 8_990, offer: nil, revocation: nil,
                signedAt: 0, currency: "USD", charged: 8_990, billedMonthly: true)
        }
        let state = SubscriptionState(
            originalTransactionId: "1", accountId: nil, productId: "pro.annual", environment: .production, status: .active, willRenew: true,
            autoRenewProductId: nil, pendingProductId: nil, purchaseDate: nil, expiresAt: periods.last?.end, gracePeriodExpiresAt: nil,
            isTrial: false,
            ownership: .purchased, latestTransactionId: "m2", lastEventType: .didRenew, lastEvent: EventPosition(signedDate: 0, eventId: ""),
            endReason: nil, billingPlan: .monthly)
        let contribution = SubscriptionAnalytics.contribution(
            of: Lifecycle.Derivation(state: state, periods: periods, ends: [], accessEndsAt: nil), length: length)
        let mrrAtStart = contribution.values.filter { $0.key.measure == .mrr && $0.key.day == AnalyticsDay(start) }.reduce(0) { $0 + $1.value }
        let revenue = contribution.values.filter { $0.key.measure == .revenueGross }.reduce(0) { $0 + $1.value }
        #expect(mrrAtStart == 8_990, "a month's price, not a twelfth of it")
        #expect(revenue == 3 * 8_990)
    }
}
