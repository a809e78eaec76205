import AppStoreModels
import Entitlements
import Foundation
import Subscriptions

/// A Play subscription (``PlaySubscription``, derived from its stored reads) in Storekeeper's words: the same
/// ``Lifecycle/Derivation`` the App Store's and Stripe's facts yield, so the credit rules, events, status and analytics
/// treat the three stores alike. A pure function of the Play subscription and the account its token names.
///
/// Status mapping (Play's subscription lifecycle, `../shared/reference/google-play.md`):
/// - `ACTIVE` → active; `CANCELED` → active with auto-renew off, until `expiryTime` (the clock then expires it);
/// - `IN_GRACE_PERIOD` → grace period until `expiryTime` (Play extends the expiry over the grace period);
/// - `ON_HOLD` → billing retry: not entitled while Google retries the payment (the account hold);
/// - `PAUSED` → expired, end reason `PAUSED`, until it resumes (a new read says so);
/// - `EXPIRED` → expired: `EXPIRED_BILLING_ERROR` when Google cancelled it (`systemInitiatedCancellation`), else
///   `EXPIRED_VOLUNTARY`. An expiry before `expiryTime` — a revocation (`SUBSCRIPTION_REVOKED`) — ends access when it
///   was seen;
/// - a chain of pending purchases only is no subscription yet (`nil`).
public enum PlayLifecycle {
    public static func derive(_ play: PlaySubscription, account: AccountID?) -> Lifecycle.Derivation? {
        guard play.isGranted, let inForce = play.periods.last ?? fallbackPeriod(play) else { return nil }
        let periods = PaidPeriod.linked(play.periods.map(paidPeriod))
        let expiry = play.expiresAt ?? inForce.expiresAt
        var accessEndsAt: Date?
        let (status, endReason): (SubscriptionStatus, EndReason?)
        switch play.state {
        case .active, .canceled: (status, endReason) = (.active, nil)
        case .inGracePeriod: (status, endReason) = (.gracePeriod, nil)
        case .onHold: (status, endReason) = (.billingRetry, nil)
        case .paused: (status, endReason) = (.expired, .unknown("PAUSED"))
        case .expired, .pending, .pendingPurchaseCanceled, .unknown:
            (status, endReason) = (.expired, .expired(play.cancellation == "systemInitiatedCancellation" ? "BILLING_ERROR" : "VOLUNTARY"))
        }
        // Not entitled before the period's end: access (and the period's credit windows) ended when that was seen.
        if status != .active && status != .gracePeriod, play.observedAt < expiry { accessEndsAt = play.observedAt }
        let productId = play.productId ?? inForce.productId
        let state = SubscriptionState(
            originalTransactionId: play.id, accountId: account, productId: productId, environment: play.isTest ? .sandbox : .production,
            status: status, willRenew: (status == .active || status == .gracePeriod) && play.willRenew && play.state != .canceled,
            autoRenewProductId: productId, pendingProductId: nil, purchaseDate: inForce.start, expiresAt: expiry,
            gracePeriodExpiresAt: status == .gracePeriod ? expiry : nil, isTrial: status == .active && play.isTrial, ownership: .purchased,
            latestTransactionId: inForce.orderId, lastEventType: .unknown("GOOGLE_PLAY"),
            lastEvent: EventPosition(signedDate: Int64((play.observedAt.timeIntervalSince1970 * 1000).rounded(.down)), eventId: play.currentToken),
            endReason: endReason, revokedAt: nil, offer: inForce.isFreeTrial ? freeTrial : nil, price: inForce.price,
            billingPeriodKey: inForce.orderId, store: .googlePlay)
        return Lifecycle.Derivation(state: state, periods: periods, ends: [], accessEndsAt: accessEndsAt)
    }

    /// A granted token whose read carries no order yet (Google fills `latestSuccessfulOrderId` with the first charge):
    /// its one period runs from the token's start to its expiry, keyed by the token.
    static func fallbackPeriod(_ play: PlaySubscription) -> PlaySubscription.Period? {
        guard let expiry = play.expiresAt, let productId = play.productId else { return nil }
        return PlaySubscription.Period(
            orderId: play.currentToken, purchaseToken: play.currentToken, productId: productId, start: play.observedAt, expiresAt: expiry,
            price: nil, currency: nil, isFreeTrial: play.isTrial, firstSeen: play.observedAt)
    }

    static let freeTrial = SubscriptionState.Offer(type: .introductory, identifier: nil, discountType: .freeTrial, period: nil)

    /// One order's period: its order id is its key and its only transaction id (searchable as Play's `GPA.…`).
    static func paidPeriod(_ period: PlaySubscription.Period) -> PaidPeriod {
        PaidPeriod(
            key: period.orderId, transactionId: period.orderId, transactionIds: [period.orderId], productId: period.productId,
            start: period.start, end: period.expiresAt, price: period.isFreeTrial ? 0 : period.price,
            offer: period.isFreeTrial ? freeTrial : nil, revocation: nil,
            signedAt: Int64((period.firstSeen.timeIntervalSince1970 * 1000).rounded(.down)), currency: period.currency?.uppercased(),
            charged: period.isFreeTrial ? 0 : period.price)
    }
}
