import Foundation

/// A promotional offer the app may present, as configured in `STOREKEEPER_OFFERS`: the App Store Connect offer id,
/// its product, who may have it, and whether an account gets it once.
public struct PromotionalOffer: Hashable, Sendable {
    /// Who an offer is for.
    public enum Audience: String, Hashable, Sendable, Codable, CaseIterable {
        /// Current subscribers (a retention or upgrade offer).
        case active
        /// Former subscribers with no access now (a win-back offer).
        case lapsed
        /// Anyone who has subscribed, now or before.
        case subscribers
    }

    public var id: String
    public var productId: String
    public var audience: Audience
    public var oncePerAccount: Bool

    public init(id: String, productId: String, audience: Audience, oncePerAccount: Bool) {
        self.id = id
        self.productId = productId
        self.audience = audience
        self.oncePerAccount = oncePerAccount
    }
}

/// Who may be offered what (docs/offers.md). Storekeeper's catalogue is one subscription group, so "subscribed
/// before" means any subscription the account owns or owned (archived by a refund, revocation or transfer).
public enum OfferEligibility {
    /// The decision, with the reason when it is no.
    public enum Decision: Hashable, Sendable {
        case eligible
        case notEligible(String)
    }

    /// A promotional offer: the account must be in the offer's audience, and an offer given once per account must
    /// not have been signed for it before nor be the offer of one of its subscriptions.
    public static func promotional(
        _ offer: PromotionalOffer, subscriptions: [SubscriptionState], formerSubscriptions: Int, signedBefore: Bool, now: Date
    ) -> Decision {
        let entitled = subscriptions.contains { $0.isEntitled(at: now) }
        let subscribedBefore = !subscriptions.isEmpty || formerSubscriptions > 0
        switch offer.audience {
        case .active where !entitled:
            return .notEligible("the offer is for current subscribers")
        case .lapsed where entitled || !subscribedBefore:
            return .notEligible("the offer is for former subscribers without access")
        case .subscribers where !subscribedBefore:
            return .notEligible("the offer is for customers who have subscribed")
        default:
            break
        }
        if offer.oncePerAccount {
            if signedBefore { return .notEligible("the offer is given once per account, and was") }
            if subscriptions.contains(where: { $0.offer?.type == .promotional && $0.offer?.identifier == offer.id }) {
                return .notEligible("the offer is given once per account, and was redeemed")
            }
        }
        return .eligible
    }

    /// An introductory offer (free trial or intro price): once per customer and subscription group, so only an
    /// account that never subscribed — whichever Apple ID it used — may have one.
    public static func introductory(subscriptions: [SubscriptionState], formerSubscriptions: Int) -> Decision {
        subscriptions.isEmpty && formerSubscriptions == 0 ? .eligible : .notEligible("the account has subscribed before")
    }
}
