import AppStoreModels
import Entitlements
import Foundation
import Subscriptions

/// What one subscription adds to the analytics rollups: a pure function of its derivation (the same for the App Store
/// and Stripe), so deriving the same facts again adds the same — and the rollups do not change.
///
/// Its billing periods are read in order. A *trial* is an introductory free trial; a *paid* period is any other that is
/// not free; a free offer that is not an introductory trial counts as neither. A period counts from its start until
/// the next period of its run starts, else until its access ends: its end, where a newer period took over, or the
/// refund or revocation that ended it — and, for the last period while the subscription is in a grace period, the end
/// of the grace period. A *run* is a sequence of paid periods each starting within a minute of the previous one's end.
public enum SubscriptionAnalytics {
    /// The gap between two paid periods that still continues a run: renewals start at the previous period's end, to
    /// the second.
    public static let continuation: TimeInterval = 60

    /// The subscription's contribution. `length(productId)` gives a product's billing period from the catalogue; a
    /// product it does not know is read from its period's duration (``MonthlyValue/likelyLength(of:)``).
    public static func contribution(
        of derivation: Lifecycle.Derivation, length: (String) -> MonthlyValue.Length?
    ) -> AnalyticsContribution {
        let state = derivation.state
        let periods = derivation.periods.sorted { ($0.start, $0.key) < ($1.start, $1.key) }
        guard let first = periods.first else { return AnalyticsContribution() }
        let environment = state.environment.rollup
        var contribution = AnalyticsContribution()
        func add(_ measure: AnalyticsMeasure, _ value: Int64, on date: Date, product: String, currency: String = "") {
            contribution.add(
                value,
                at: AnalyticsKey(
                    day: AnalyticsDay(date), measure: measure, store: state.store, environment: environment, product: product, currency: currency))
        }

        add(.newCustomers, 1, on: first.start, product: first.productId)
        var runStarted = false
        var runsEnded = 0
        for (index, period) in periods.enumerated() {
            let next = periods.indices.contains(index + 1) ? periods[index + 1] : nil
            let ends = accessEnd(of: period, isLast: next == nil, state: state)
            if period.isIntroductoryTrial {
                add(.newTrials, 1, on: period.start, product: period.productId)
                add(.activeTrials, 1, on: period.start, product: period.productId)
                add(.activeTrials, -1, on: ends, product: period.productId)
                if let next, isPaid(next), next.start.timeIntervalSince(ends) <= continuation {
                    add(.trialConversions, 1, on: next.start, product: next.productId)
                    add(.trialCohortConversions, 1, on: period.start, product: period.productId)
                }
                continue
            }
            guard isPaid(period) else { continue }
            // The run goes on into the next period when it is paid and starts at once: this one counts until then.
            let continues = next.map { isPaid($0) && $0.start.timeIntervalSince(ends) <= continuation } ?? false
            let counted = continues ? max(next!.start, period.start) : ends
            if !runStarted {
                if runsEnded > 0, !derivation.recoveredPeriods.contains(period.key) {
                    add(.resubscriptions, 1, on: period.start, product: period.productId)
                }
                runStarted = true
            }
            if derivation.recoveredPeriods.contains(period.key) { add(.billingRecoveries, 1, on: period.start, product: period.productId) }
            add(.activeSubscriptions, 1, on: period.start, product: period.productId)
            add(.activeSubscriptions, -1, on: counted, product: period.productId)
            if let price = period.price, let currency = period.currency {
                let periodLength =
                    period.billedMonthly
                    ? MonthlyValue.Length(months: 1, days: 0)
                    : length(period.productId) ?? MonthlyValue.likelyLength(of: period.end.timeIntervalSince(period.start))
                let monthly = MonthlyValue.of(price, length: periodLength)
                add(.mrr, monthly, on: period.start, product: period.productId, currency: currency)
                add(.mrr, -monthly, on: counted, product: period.productId, currency: currency)
            }
            if let charged = period.charged ?? period.price, charged > 0, let currency = period.currency {
                add(.transactions, 1, on: period.start, product: period.productId)
                add(.revenueGross, charged, on: period.start, product: period.productId, currency: currency)
                if let revocation = period.revocation, revocation.type != "FAMILY_REVOKE" {
                    let refunded = revocation.prorated.map { MonthlyValue.divided(charged &* Int64($0), by: 100_000) } ?? charged
                    add(.refundedTransactions, 1, on: revocation.date, product: period.productId)
                    add(.refunds, refunded, on: revocation.date, product: period.productId, currency: currency)
                }
            }
            // A run followed by a period the store reports as a billing recovery did not churn: the customer stayed.
            if !continues, !(next.map { derivation.recoveredPeriods.contains($0.key) } ?? false) {
                add(.churned, 1, on: counted, product: period.productId)
                runsEnded += 1
            }
            if !continues { runStarted = false }
        }
        return contribution
    }

    /// A period the customer paid for: not a free offer (an introductory trial or a free promotional period).
    static func isPaid(_ period: PaidPeriod) -> Bool { !period.isFreeOffer }

    /// When `period`'s access ends: where it closes (its end, or where a newer period took over), earlier at a refund or
    /// revocation that ends access, later — for the last period — at the end of a grace period in progress.
    static func accessEnd(of period: PaidPeriod, isLast: Bool, state: SubscriptionState) -> Date {
        var end = period.closesAt
        if let revocation = period.revocation, !revocation.keepsAccess { end = min(end, max(revocation.date, period.start)) }
        if isLast, period.revocation == nil, state.status == .gracePeriod, let grace = state.gracePeriodExpiresAt, grace > end { end = grace }
        return max(end, period.start)
    }
}
