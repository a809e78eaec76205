import Credits
import Foundation
import StripeStore

extension StripeDerivation.Settings {
    /// The settings `work` derives Stripe subscriptions with — `STOREKEEPER_STRIPE_GRACE_DAYS` and the Stripe prices the
    /// catalogue sells — so `replay` derives exactly as the worker did.
    public init(graceDays: Int, catalogue: TierCatalogue) {
        self.init(
            gracePeriod: TimeInterval(graceDays * 86_400),
            prices: Set(catalogue.tiers.flatMap(\.products).filter { $0.store == .stripe }.map(\.id)))
    }
}
