import AppStoreModels
import Entitlements
import Foundation
import Subscriptions

/// A Play subscription (``PlaySubscription``, derived from its stored reads) in Storekeeper's words: the same
/// ``Lifecycle/Derivation`` the App Store's and Stripe's facts yield, so the credit rules, events, status and analytics
/// treat the three stores alike. A pure function of the Play subscription, the account its token names and the
/// catalogue's answers (``Catalogue``).
///
/// Status mapping (Play's subscription lifecycle, `../shared/reference/google-play.md`):
/// - `ACTIVE` → active; `CANCELED` → active with auto-renew off, until `expiryTime` (the clock then expires it);
/// - `IN_GRACE_PERIOD` → grace period until `expiryTime` (Play moves the expiry over the grace period);
/// - `ON_HOLD` → billing retry: not entitled while Google retries the payment (auto-renew stays on);
/// - `PAUSED` → expired, end reason `PAUSED`, until a read says it resumed;
/// - `EXPIRED` after a whole refund of one of the current token's orders → refunded (`REFUND`), access ended then;
/// - `EXPIRED` after Play said `SUBSCRIPTION_REVOKED` for the token, with no refund → revoked (`REVOKE`);
///   otherwise expired: `EXPIRED_BILLING_RETRY` when Google cancelled it (`systemInitiatedCancellation`), else
///   `EXPIRED_VOLUNTARY`;
/// - a chain of pending purchases only is no subscription yet (`nil`).
///
/// A state that does not entitle ends access (and the credit windows) when it was read, or at the expiry Play gives
/// if that is earlier. Each order is a period, ending where the newest read naming it says (Play moves the expiry
/// back when access ends early); it starts one product period before what was first paid for (a recovery or a resume
/// starts its period then), never before its token.
public enum PlayLifecycle {
    /// What the derivation asks the catalogue.
    public struct Catalogue: Sendable {
        /// Where a period of the product that ends at the date started (one billing period earlier); `nil` when the
        /// catalogue does not sell the product.
        public var periodStart: @Sendable (_ productId: String, _ end: Date) -> Date?
        /// Whether the first product's tier is above the second's: a plan change to it is an upgrade.
        public var isUpgrade: @Sendable (_ to: String, _ from: String) -> Bool

        public init(
            periodStart: @escaping @Sendable (String, Date) -> Date? = { _, _ in nil },
            isUpgrade: @escaping @Sendable (String, String) -> Bool = { _, _ in false }
        ) {
            self.periodStart = periodStart
            self.isUpgrade = isUpgrade
        }
    }

    /// `claimed`: `account` is the app's claim of one of the chain's tokens (``Lifecycle/Derivation/ownerClaimed``).
    public static func derive(_ play: PlaySubscription, account: AccountID?, claimed: Bool = false, catalogue: Catalogue = Catalogue())
        -> Lifecycle.Derivation?
    {
        guard play.isGranted, let last = play.periods.last ?? fallbackPeriod(play) else { return nil }
        let periods = paidPeriods(play.periods.isEmpty ? [last] : play.periods, catalogue: catalogue)
        let inForce = periods.last!
        let expiry = play.expiresAt ?? last.expiresAt
        let status: SubscriptionStatus
        let endReason: EndReason?
        switch play.state {
        case .active, .canceled: (status, endReason) = (.active, nil)
        case .inGracePeriod: (status, endReason) = (.gracePeriod, nil)
        case .onHold: (status, endReason) = (.billingRetry, nil)
        case .paused: (status, endReason) = (.expired, .unknown("PAUSED"))
        // A refund is a refund whichever store made it: Play voids an order only when it is to be revoked, so a token
        // one of whose orders was voided whole is refunded, as Apple's and Stripe's refunds are; a revocation without
        // one (the developer's or Google's `SUBSCRIPTION_REVOKED` alone) is revoked.
        case .expired where play.revokedAt != nil && play.refundedAt != nil: (status, endReason) = (.refunded, .refund)
        case .expired where play.revokedAt != nil: (status, endReason) = (.revoked, .revoke)
        case .expired, .pending, .pendingPurchaseCanceled, .unknown:
            (status, endReason) = (.expired, .expired(play.cancellation == "systemInitiatedCancellation" ? "BILLING_RETRY" : "VOLUNTARY"))
        }
        // In grace Play moves the line item's expiry to the grace period's end, and on hold back to when access ended.
        // As the App Store's and Stripe's, the subscription's `expiresAt` stays the end of what was paid for (what the
        // billing issue told the app, and where the 60 days of retries count from), and the grace period's end is its
        // own field.
        let paidUntil = status == .gracePeriod || status == .billingRetry ? min(last.paidUntil, expiry) : expiry
        let entitles = status == .active || status == .gracePeriod
        let accessEndsAt = entitles ? nil : [play.observedAt, expiry, play.revokedAt].compactMap { $0 }.min()
        let productId = play.productId ?? inForce.productId
        let state = SubscriptionState(
            originalTransactionId: play.id, accountId: account, productId: productId, environment: play.isTest ? .sandbox : .production,
            status: status, willRenew: (entitles || status == .billingRetry) && play.willRenew && play.state != .canceled,
            autoRenewProductId: productId, pendingProductId: nil, purchaseDate: inForce.start, expiresAt: paidUntil,
            gracePeriodExpiresAt: status == .gracePeriod ? expiry : nil, isTrial: status == .active && play.isTrial, ownership: .purchased,
            latestTransactionId: inForce.key, lastEventType: .unknown("GOOGLE_PLAY"),
            lastEvent: EventPosition(signedDate: Int64((play.observedAt.timeIntervalSince1970 * 1000).rounded(.down)), eventId: play.currentToken),
            endReason: endReason, revokedAt: status == .revoked || status == .refunded ? accessEndsAt : nil, offer: inForce.offer,
            price: inForce.price,
            billingPeriodKey: inForce.key, store: .googlePlay)
        return Lifecycle.Derivation(state: state, periods: periods, ends: [], accessEndsAt: accessEndsAt, ownerClaimed: claimed && account != nil)
    }

    /// The orders as paid periods, oldest first. A token's first period that replaced another token's (a plan change)
    /// closes that one at its start, and is its upgrade when the catalogue puts its tier above.
    static func paidPeriods(_ orders: [PlaySubscription.Period], catalogue: Catalogue) -> [PaidPeriod] {
        var periods: [PaidPeriod] = orders.map { order in
            var start = order.isFreeTrial ? nil : catalogue.periodStart(order.productId, order.paidUntil)
            if let tokenStart = order.tokenStart { start = max(start ?? tokenStart, tokenStart) }
            let from = min(start ?? order.start, order.paidUntil)
            return PaidPeriod(
                key: order.orderId, transactionId: order.orderId, transactionIds: [order.orderId], productId: order.productId,
                start: from, end: max(order.expiresAt, from), price: order.isFreeTrial ? 0 : order.price,
                offer: order.isFreeTrial ? freeTrial : nil,
                // A refund of an order takes back what its period gave; access is Play's to end (a revocation says so).
                revocation: order.voidedAt.map { PaidPeriod.Revocation(date: $0, type: "REFUND_FULL", milliPercent: nil, keepsAccess: true) },
                signedAt: Int64((order.firstSeen.timeIntervalSince1970 * 1000).rounded(.down)), currency: order.currency?.uppercased(),
                charged: order.isFreeTrial ? 0 : order.price)
        }.sorted { ($0.start, $0.key) < ($1.start, $1.key) }
        // A period that began before the one before it ended (a recovery from the grace period, a renewal paid early)
        // replaces it from its start, as the App Store's periods are linked.
        for index in periods.indices {
            guard let next = periods[(index + 1)...].first(where: { $0.start < periods[index].end }) else { continue }
            periods[index].replacedAt = max(next.start, periods[index].start)
        }
        let tokens = Dictionary(uniqueKeysWithValues: orders.map { ($0.orderId, $0.purchaseToken) })
        let paidUntil = Dictionary(uniqueKeysWithValues: orders.map { ($0.orderId, $0.paidUntil) })
        for index in periods.indices {
            let token = tokens[periods[index].key]
            // The first period of its token, after a period of another token: the plan change.
            guard !periods[..<index].contains(where: { tokens[$0.key] == token }),
                let previous = periods[..<index].lastIndex(where: { tokens[$0.key] != token })
            else { continue }
            // The replaced period keeps what was paid for as its end (Play's newest read of the old token ends it at the
            // switch), as an App Store upgrade's does: the switch is its replacement.
            periods[previous].end = max(periods[previous].end, paidUntil[periods[previous].key] ?? periods[previous].end)
            periods[previous].replacedAt = min(periods[previous].end, max(periods[index].start, periods[previous].start))
            if catalogue.isUpgrade(periods[index].productId, periods[previous].productId) {
                periods[index].upgradedFrom = periods[previous].key
            } else {
                periods[index].downgradedFrom = periods[previous].key
            }
        }
        return periods
    }

    /// A granted token whose read carries no order yet (Google fills `latestSuccessfulOrderId` with the first charge):
    /// its one period runs from the token's start to its expiry, keyed by the token.
    static func fallbackPeriod(_ play: PlaySubscription) -> PlaySubscription.Period? {
        guard let expiry = play.expiresAt, let productId = play.productId else { return nil }
        return PlaySubscription.Period(
            orderId: play.currentToken, purchaseToken: play.currentToken, productId: productId, start: play.observedAt, expiresAt: expiry,
            paidUntil: expiry, tokenStart: nil, price: nil, currency: nil, isFreeTrial: play.isTrial, firstSeen: play.observedAt)
    }

    static let freeTrial = SubscriptionState.Offer(type: .introductory, identifier: nil, discountType: .freeTrial, period: nil)
}
