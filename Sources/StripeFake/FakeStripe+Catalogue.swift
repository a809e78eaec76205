import Credits
import Entitlements
import StripeStore

extension FakeStripe {
    /// The Stripe prices a catalogue sells: each `store: stripe` product as Stripe would hold it (amount in the
    /// currency's minor unit, recurrence from its period; a lifetime product is a one-time price).
    public static func prices(of catalogue: TierCatalogue) -> [StripePrice] {
        let topUps = catalogue.topUps.filter { $0.store == .stripe }.map { topUp in
            StripePrice(
                id: topUp.id, unitAmount: StripeAmount.minorUnits(milliunits: topUp.price ?? 0, currency: topUp.currency ?? "usd"),
                currency: (topUp.currency ?? "usd").lowercased(), recurring: nil)
        }
        return topUps
            + catalogue.tiers.flatMap(\.products).filter { $0.store == .stripe }.map { product in
                let recurring: StripePrice.Recurring? = product.billingPeriod.map { period in
                    if period.months % 12 == 0, period.months > 0 { return .init(interval: "year", intervalCount: period.months / 12) }
                    if period.months > 0 { return .init(interval: "month", intervalCount: period.months) }
                    return period.days % 7 == 0
                        ? .init(interval: "week", intervalCount: period.days / 7) : .init(interval: "day", intervalCount: period.days)
                }
                let minor = StripeAmount.minorUnits(milliunits: product.price, currency: product.currency)
                return StripePrice(id: product.id, unitAmount: minor, currency: product.currency.lowercased(), recurring: recurring)
            }
    }
}
