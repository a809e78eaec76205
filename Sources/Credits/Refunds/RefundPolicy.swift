import AppStoreModels
import Foundation

/// How Storekeeper answers Apple's consumption requests when the app does not answer itself (configured by
/// `STOREKEEPER_REFUND_POLICY`). The share of credits used decides the preference: nothing used asks for a full
/// refund, more than ``declineAbovePercent`` asks to decline, anything between asks for a prorated refund.
public struct RefundPolicy: Hashable, Sendable {
    /// Apple's window to answer a consumption request, from the notification's `signedDate`.
    public static let appleDeadline: TimeInterval = 12 * 3600

    /// How long the app has to answer itself (through the API) before Storekeeper answers from the policy.
    public var answerAfter: TimeInterval
    /// Whether the app offered a sample or trial before purchase (the free tier's credits count as one).
    public var sampleContentProvided: Bool
    /// A subscription period whose credits were used above this share gets `DECLINE`.
    public var subscriptionDeclineAbovePercent: Int
    /// A top-up whose credits were used above this share gets `DECLINE`.
    public var consumableDeclineAbovePercent: Int

    public init(
        answerAfter: TimeInterval = 3600, sampleContentProvided: Bool = false, subscriptionDeclineAbovePercent: Int = 50,
        consumableDeclineAbovePercent: Int = 50
    ) {
        self.answerAfter = answerAfter
        self.sampleContentProvided = sampleContentProvided
        self.subscriptionDeclineAbovePercent = subscriptionDeclineAbovePercent
        self.consumableDeclineAbovePercent = consumableDeclineAbovePercent
    }

    /// The answer for a purchase whose credits were used as `consumption` says. A purchase Storekeeper never credited
    /// was not delivered: the customer should get their money back.
    public func answer(for purchase: RefundedPurchase, consumption: PurchaseConsumption) -> ConsumptionAnswer {
        guard consumption.delivered else {
            return ConsumptionAnswer(
                consumptionPercentage: purchase == .consumable ? 0 : nil, deliveryStatus: .undeliveredOther, refundPreference: .grantFull,
                sampleContentProvided: sampleContentProvided)
        }
        let used = consumption.milliPercent
        let threshold = Int32(purchase == .subscription ? subscriptionDeclineAbovePercent : consumableDeclineAbovePercent) * 1000
        let preference: RefundPreference = used == 0 ? .grantFull : used > threshold ? .decline : .grantProrated
        return ConsumptionAnswer(
            consumptionPercentage: purchase == .consumable ? used : nil, deliveryStatus: .delivered, refundPreference: preference,
            sampleContentProvided: sampleContentProvided)
    }

    /// When the answer is due: after the app's window, and well before Apple's deadline even when the window is long.
    public func answerAt(requestedAt: Date) -> Date {
        requestedAt.addingTimeInterval(min(answerAfter, Self.appleDeadline - 3600))
    }
}
