import Foundation
import Testing

@testable import Subscriptions

/// Who may be offered what: Apple gives an introductory offer once per customer and subscription group; a win-back
/// offer is for former subscribers without access; promotional offers are for customers who have subscribed.
@Suite("Offer eligibility")
struct OfferEligibilityTests {
    let now = Date(timeIntervalSince1970: 1_800_000_000)

    func subscription(expiring offset: TimeInterval, offer: SubscriptionState.Offer? = nil) -> SubscriptionState {
        var state = SubscriptionState(
            originalTransactionId: "1000", accountId: AccountID("alice"), productId: "pro.monthly", environment: .sandbox,
            status: offset > 0 ? .active : .expired, willRenew: offset > 0, autoRenewProductId: "pro.monthly", pendingProductId: nil,
            purchaseDate: now.addingTimeInterval(offset - 30 * 86_400), expiresAt: now.addingTimeInterval(offset), gracePeriodExpiresAt: nil,
            isTrial: false, ownership: .purchased, latestTransactionId: "t1", lastEventType: NotificationType("X"),
            lastEvent: EventPosition(signedDate: 1, eventId: "e1"), endReason: offset > 0 ? nil : .expired("VOLUNTARY"), billingPeriodKey: "p1")
        state.offer = offer
        return state
    }

    func decide(_ audience: PromotionalOffer.Audience, once: Bool = true, _ subscriptions: [SubscriptionState], former: Int = 0, signed: Bool = false)
        -> OfferEligibility.Decision
    {
        OfferEligibility.promotional(
            PromotionalOffer(id: "o1", productId: "pro.monthly", audience: audience, oncePerAccount: once), subscriptions: subscriptions,
            formerSubscriptions: former, signedBefore: signed, now: now)
    }

    @Test("audiences: active needs access now; lapsed needs a past subscription and no access; subscribers any subscription")
    func audiences() {
        let active = [subscription(expiring: 86_400)]
        let lapsed = [subscription(expiring: -86_400)]
        #expect(decide(.active, active) == .eligible)
        #expect(decide(.active, lapsed) != .eligible)
        #expect(decide(.lapsed, lapsed) == .eligible)
        #expect(decide(.lapsed, active) != .eligible)
        #expect(decide(.lapsed, []) != .eligible)
        #expect(decide(.lapsed, [], former: 1) == .eligible, "a refunded or transferred subscription was a subscription")
        #expect(decide(.subscribers, lapsed) == .eligible && decide(.subscribers, active) == .eligible)
        #expect(decide(.subscribers, []) != .eligible)
    }

    @Test("once per account: not after a signature, nor when a subscription runs on the offer; otherwise every time")
    func once() {
        let lapsed = [subscription(expiring: -86_400)]
        #expect(decide(.lapsed, lapsed, signed: true) != .eligible)
        #expect(decide(.lapsed, once: false, lapsed, signed: true) == .eligible)
        let redeemed = [subscription(expiring: 86_400, offer: .init(type: .promotional, identifier: "o1", discountType: .payAsYouGo, period: "P1M"))]
        #expect(decide(.active, redeemed) != .eligible)
        let other = [subscription(expiring: 86_400, offer: .init(type: .introductory, identifier: "o1", discountType: .freeTrial, period: "P1W"))]
        #expect(decide(.active, other) == .eligible, "an introductory offer with the same id is another offer")
    }

    @Test("introductory: only an account that never subscribed")
    func introductory() {
        #expect(OfferEligibility.introductory(subscriptions: [], formerSubscriptions: 0) == .eligible)
        #expect(OfferEligibility.introductory(subscriptions: [subscription(expiring: -86_400)], formerSubscriptions: 0) != .eligible)
        #expect(OfferEligibility.introductory(subscriptions: [], formerSubscriptions: 1) != .eligible)
    }
}
