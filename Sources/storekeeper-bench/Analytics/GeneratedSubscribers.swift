import Analytics
import AppStoreModels
import Entitlements
import Foundation
import Subscriptions

/// A year of generated subscribers for `bench analytics`: each one's billing periods in both stores — trials that
/// convert or lapse, monthly renewals with churn and comebacks, annual plans, refunds, four currencies — as the
/// derivation the workers would reach, so its contribution is the one `SubscriptionAnalytics` computes for the rollups.
struct GeneratedSubscribers {
    /// xorshift64*: deterministic, so every run loads the same year.
    struct Random {
        var state: UInt64
        mutating func next() -> UInt64 {
            state ^= state >> 12
            state ^= state << 25
            state ^= state >> 27
            return state &* 2_685_821_657_736_338_717
        }
        mutating func unit() -> Double { Double(next() >> 11) / Double(1 << 53) }
        mutating func chance(_ probability: Double) -> Bool { unit() < probability }
        mutating func pick<T>(_ weighted: [(T, Double)]) -> T {
            var roll = unit() * weighted.reduce(0) { $0 + $1.1 }
            for (value, weight) in weighted {
                roll -= weight
                if roll < 0 { return value }
            }
            return weighted.last!.0
        }
    }

    /// Products and their billing periods, in both stores.
    static let products: [(id: String, store: Store, days: Double, weight: Double)] = [
        ("pro.monthly", .appStore, 30, 30), ("basic.monthly", .appStore, 30, 19), ("max.monthly", .appStore, 30, 11),
        ("pro.annual", .appStore, 365, 15),
        ("price_pro_monthly", .stripe, 30, 15), ("price_pro_annual", .stripe, 365, 10),
    ]
    /// Monthly prices in milliunits per currency; annual plans cost ten months.
    static let monthlyPrices: [String: [String: Int64]] = [
        "USD": ["pro": 9990, "basic": 2990, "max": 19990], "EUR": ["pro": 9990, "basic": 2990, "max": 19990],
        "GBP": ["pro": 8990, "basic": 2490, "max": 17990], "JPY": ["pro": 1_500_000, "basic": 450_000, "max": 3_000_000],
    ]

    let today: Date
    var random: Random

    init(today: Date, seed: UInt64 = 0x5EED_2026_1126) {
        self.today = today
        random = Random(state: seed)
    }

    /// The billing length of each generated product, as the catalogue would give it.
    static func length(_ productId: String) -> MonthlyValue.Length? {
        guard let product = products.first(where: { $0.id == productId }) else { return nil }
        return product.days > 300 ? MonthlyValue.Length(months: 12, days: 0) : MonthlyValue.Length(months: 1, days: 0)
    }

    /// Subscriber `index`: its derivation, with the periods it had by today.
    mutating func subscriber(_ index: Int) -> Lifecycle.Derivation {
        let product = random.pick(Self.products.map { ($0, $0.weight) })
        let currency = random.pick([("USD", 55.0), ("EUR", 25), ("GBP", 12), ("JPY", 8)])
        let tier = product.id.contains("basic") ? "basic" : product.id.contains("max") ? "max" : "pro"
        let monthly = Self.monthlyPrices[currency]![tier]!
        let price = product.days > 300 ? monthly * 10 : monthly
        let id = product.store == .stripe ? "sub_gen\(index)" : String(4_000_000_000_000 + index)
        var start = today.addingTimeInterval(-random.unit() * 364 * 86_400)
        var periods: [PaidPeriod] = []
        func period(_ from: Date, days: Double, paid: Bool) -> PaidPeriod {
            let key = "\(id).\(periods.count)"
            return PaidPeriod(
                key: key, transactionId: key, transactionIds: [key], productId: product.id, start: from, end: from.addingTimeInterval(days * 86_400),
                price: paid ? price : 0,
                offer: paid ? nil : SubscriptionState.Offer(type: .introductory, identifier: nil, discountType: .freeTrial, period: "P1W"),
                revocation: nil, signedAt: Int64(from.timeIntervalSince1970 * 1000), currency: currency, charged: paid ? price : 0)
        }
        if product.days < 300, random.chance(0.35) {
            periods.append(period(start, days: 7, paid: false))
            start = start.addingTimeInterval(7 * 86_400)
            guard random.chance(0.45) else { return derivation(id: id, product: product.id, store: product.store, periods: periods) }
        }
        var running = true
        while running, start < today {
            var next = period(start, days: product.days, paid: true)
            if random.chance(0.02) {
                next.revocation = PaidPeriod.Revocation(
                    date: start.addingTimeInterval(random.unit() * 10 * 86_400), type: "REFUND_FULL", milliPercent: nil)
            }
            periods.append(next)
            start = next.end
            if next.revocation != nil || !random.chance(product.days > 300 ? 0.7 : 0.9) {
                // Churned: a tenth come back a few weeks later.
                guard random.chance(0.1) else {
                    running = false
                    continue
                }
                start = start.addingTimeInterval((5 + random.unit() * 35) * 86_400)
            }
        }
        return derivation(id: id, product: product.id, store: product.store, periods: periods)
    }

    private func derivation(id: String, product: String, store: Store, periods: [PaidPeriod]) -> Lifecycle.Derivation {
        let last = periods.last!
        let running = last.end > today && last.revocation == nil
        let state = SubscriptionState(
            originalTransactionId: id, accountId: nil, productId: product, environment: .production, status: running ? .active : .expired,
            willRenew: running, autoRenewProductId: product, pendingProductId: nil, purchaseDate: last.start, expiresAt: last.end,
            gracePeriodExpiresAt: nil, isTrial: last.isIntroductoryTrial, ownership: .purchased, latestTransactionId: last.transactionId,
            lastEventType: .didRenew, lastEvent: EventPosition(signedDate: last.signedAt, eventId: id),
            endReason: running ? nil : .expired("VOLUNTARY"),
            price: last.price, billingPeriodKey: last.key, store: store)
        return Lifecycle.Derivation(state: state, periods: PaidPeriod.linked(periods), ends: [], accessEndsAt: nil)
    }
}
