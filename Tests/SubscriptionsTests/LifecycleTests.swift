import AppStoreModels
import Foundation
import Testing

@testable import Subscriptions

/// One test per lifecycle rule of SPEC §6, without a database.
@Suite("Lifecycle rules")
struct LifecycleTests {
    let factory = EventFactory()
    var day: Int64 { factory.day }
    var start: Int64 { factory.start }
    var now: Date { factory.date(start + 5 * day) }

    func subscribed(offerDiscountType: String? = nil) -> SubscriptionState {
        Lifecycle.apply(
            factory.event("SUBSCRIBED", "INITIAL_BUY", signedAt: start, offerDiscountType: offerDiscountType), to: nil, now: now
        ).state!
    }

    func apply(_ event: SubscriptionEvent, to state: SubscriptionState) -> Lifecycle.Decision {
        Lifecycle.apply(event, to: state, now: now)
    }

    @Test("SUBSCRIBED/INITIAL_BUY: active from the transaction, linked to the appAccountToken")
    func subscribe() {
        let decision = Lifecycle.apply(factory.event("SUBSCRIBED", "INITIAL_BUY", signedAt: start), to: nil, now: now)
        #expect(decision.outcome == .applied)
        let state = decision.state!
        #expect(decision.effects == [.periodStarted(state.period!, upgradedFrom: nil)])
        #expect(state.status == .active)
        #expect(state.accountId == factory.account)
        #expect(state.willRenew)
        #expect(state.purchaseDate == factory.date(start))
        #expect(state.expiresAt == factory.date(start + 30 * day))
        #expect(state.lastEventType == "SUBSCRIBED")
        #expect(!state.isTrial)
    }

    @Test("a free-trial offer marks the subscription as a trial")
    func trial() {
        let state = subscribed(offerDiscountType: "FREE_TRIAL")
        #expect(state.isTrial)
        #expect(state.offer == .init(type: 1, identifier: nil, discountType: "FREE_TRIAL", period: nil))
    }

    @Test("SUBSCRIBED/RESUBSCRIBE after an expiry starts a new run; the archived end stays")
    func resubscribe() {
        let expired = apply(factory.event("EXPIRED", "VOLUNTARY", signedAt: start + 30 * day, status: 2, autoRenew: 0), to: subscribed())
        #expect(expired.effects == [.ended(reason: "EXPIRED_VOLUNTARY", transactionId: "2000000000000001-0", at: factory.date(start + 30 * day))])
        let back = apply(factory.event("SUBSCRIBED", "RESUBSCRIBE", signedAt: start + 40 * day, period: 2, purchaseDate: start + 40 * day, expiresDate: start + 70 * day), to: expired.state!)
        #expect(back.state!.status == .active)
        #expect(back.state!.endReason == nil)
        #expect(back.state!.purchaseDate == factory.date(start + 40 * day))
        #expect(back.effects == [.periodStarted(back.state!.period!, upgradedFrom: nil)])
    }

    @Test("DID_RENEW moves the period forward and applies a queued downgrade")
    func renew() {
        let downgraded = apply(
            factory.event("DID_CHANGE_RENEWAL_PREF", "DOWNGRADE", signedAt: start + day, autoRenewProduct: "basic.monthly"), to: subscribed()
        ).state!
        #expect(downgraded.pendingProductId == "basic.monthly")
        let renewed = apply(factory.event("DID_RENEW", signedAt: start + 30 * day, period: 1, product: "basic.monthly"), to: downgraded)
        #expect(renewed.effects == [.periodStarted(renewed.state!.period!, upgradedFrom: nil)])
        #expect(renewed.state!.period!.start == factory.date(start + 30 * day))
        #expect(renewed.state!.expiresAt == factory.date(start + 60 * day))
        #expect(renewed.state!.purchaseDate == factory.date(start + 30 * day))
        #expect(renewed.state!.productId == "basic.monthly")
        #expect(renewed.state!.pendingProductId == nil)
    }

    @Test("a DID_RENEW that does not move the period asks for a recheck after the period ends")
    func earlyRenewal() {
        let decision = apply(factory.event("DID_RENEW", signedAt: start + 29 * day, period: 0), to: subscribed())
        #expect(decision.effects == [.recheckRenewal(after: factory.date(start + 30 * day))])
        let late = Lifecycle.apply(factory.event("DID_RENEW", signedAt: start + 29 * day), to: subscribed(), now: factory.date(start + 31 * day))
        #expect(late.effects == [.recheckRenewal(after: factory.date(start + 31 * day))])
    }

    @Test("DID_CHANGE_RENEWAL_STATUS: willRenew follows, access unchanged; the subtype decides without renewal info")
    func renewalStatus() {
        let off = apply(factory.event("DID_CHANGE_RENEWAL_STATUS", "AUTO_RENEW_DISABLED", signedAt: start + day, autoRenew: 0), to: subscribed()).state!
        #expect(!off.willRenew)
        #expect(off.isEntitled(at: now))
        #expect(off.expiresAt == factory.date(start + 30 * day))
        let on = apply(factory.event("DID_CHANGE_RENEWAL_STATUS", "AUTO_RENEW_ENABLED", signedAt: start + 2 * day), to: off).state!
        #expect(on.willRenew)
        let offBySubtype = apply(
            factory.event("DID_CHANGE_RENEWAL_STATUS", "AUTO_RENEW_DISABLED", signedAt: start + 3 * day, renewalInfo: false), to: on).state!
        #expect(!offBySubtype.willRenew)
    }

    @Test("DID_CHANGE_RENEWAL_PREF/UPGRADE: new product and period at once")
    func upgrade() {
        let upgradeAt = start + 10 * day
        let old = subscribed()
        let decision = apply(
            factory.event("DID_CHANGE_RENEWAL_PREF", "UPGRADE", signedAt: upgradeAt, period: 1, product: "max.monthly", purchaseDate: upgradeAt, expiresDate: upgradeAt + 30 * day),
            to: old)
        let state = decision.state!
        #expect(decision.effects == [.periodStarted(state.period!, upgradedFrom: old.period!)])
        #expect(state.productId == "max.monthly")
        #expect(state.purchaseDate == factory.date(upgradeAt))
        #expect(state.expiresAt == factory.date(upgradeAt + 30 * day))
        #expect(state.pendingProductId == nil)
        #expect(state.latestTransactionId == "2000000000000001-1")
    }

    @Test("DID_CHANGE_RENEWAL_PREF/DOWNGRADE queues the change; without subtype it cancels it")
    func downgradeAndCancel() {
        let queued = apply(factory.event("DID_CHANGE_RENEWAL_PREF", "DOWNGRADE", signedAt: start + day, autoRenewProduct: "basic.monthly"), to: subscribed()).state!
        #expect(queued.pendingProductId == "basic.monthly")
        #expect(queued.productId == "pro.monthly")
        #expect(queued.expiresAt == factory.date(start + 30 * day))
        let cancelled = apply(factory.event("DID_CHANGE_RENEWAL_PREF", signedAt: start + 2 * day), to: queued).state!
        #expect(cancelled.pendingProductId == nil)
        let cancelledWithoutInfo = apply(factory.event("DID_CHANGE_RENEWAL_PREF", signedAt: start + 2 * day, renewalInfo: false), to: queued).state!
        #expect(cancelledWithoutInfo.pendingProductId == nil)
    }

    @Test("OFFER_REDEEMED: a win-back resubscription is recorded as such; without subtype the offer applies to the period")
    func offers() {
        let expired = apply(factory.event("EXPIRED", "VOLUNTARY", signedAt: start + 30 * day, status: 2, autoRenew: 0), to: subscribed()).state!
        let winBack = apply(
            factory.event("OFFER_REDEEMED", "RESUBSCRIBE", signedAt: start + 50 * day, period: 2, offerType: 4, offerDiscountType: "PAY_AS_YOU_GO", purchaseDate: start + 50 * day, expiresDate: start + 80 * day),
            to: expired
        ).state!
        #expect(winBack.status == .active)
        #expect(winBack.offer?.isWinBack == true)
        let promo = apply(factory.event("OFFER_REDEEMED", signedAt: start + 3 * day, offerType: 2, offerDiscountType: "PAY_UP_FRONT"), to: subscribed()).state!
        #expect(promo.offer?.type == 2)
        #expect(promo.expiresAt == factory.date(start + 30 * day))
        #expect(promo.status == .active)
    }

    @Test("DID_FAIL_TO_RENEW/GRACE_PERIOD: entitled until the grace end (3 days when Apple gives none)")
    func gracePeriod() {
        let graceEnd = start + 36 * day
        let grace = apply(factory.event("DID_FAIL_TO_RENEW", "GRACE_PERIOD", signedAt: start + 30 * day, status: 4, gracePeriodEnd: graceEnd), to: subscribed()).state!
        #expect(grace.status == .gracePeriod)
        #expect(grace.gracePeriodExpiresAt == factory.date(graceEnd))
        #expect(apply(factory.event("DID_FAIL_TO_RENEW", "GRACE_PERIOD", signedAt: start + 30 * day, status: 4, gracePeriodEnd: graceEnd), to: subscribed()).effects
            == [.periodExtended(transactionId: "2000000000000001-0", until: factory.date(graceEnd))])
        #expect(grace.isEntitled(at: factory.date(graceEnd - 1)))
        #expect(!grace.isEntitled(at: factory.date(graceEnd)))
        let undated = apply(factory.event("DID_FAIL_TO_RENEW", "GRACE_PERIOD", signedAt: start + 30 * day, status: 4), to: subscribed()).state!
        #expect(undated.isEntitled(at: factory.date(start + 33 * day - 1)))
        #expect(!undated.isEntitled(at: factory.date(start + 33 * day)))
    }

    @Test("DID_FAIL_TO_RENEW without grace and GRACE_PERIOD_EXPIRED: billing retry, not entitled, until Apple's window ends")
    func billingRetry() {
        let retry = apply(factory.event("DID_FAIL_TO_RENEW", signedAt: start + 30 * day, status: 3), to: subscribed()).state!
        #expect(retry.status == .billingRetry)
        #expect(!retry.isEntitled(at: factory.date(start + 31 * day)))
        #expect(retry.effectiveStatus(at: factory.date(start + 31 * day)) == .billingRetry)
        #expect(retry.effectiveStatus(at: factory.date(start + 90 * day)) == .expired)
        let graceOver = apply(factory.event("GRACE_PERIOD_EXPIRED", signedAt: start + 36 * day, status: 3), to: subscribed()).state!
        #expect(graceOver.status == .billingRetry)
        let recovered = apply(factory.event("DID_RENEW", "BILLING_RECOVERY", signedAt: start + 40 * day, period: 1, purchaseDate: start + 40 * day, expiresDate: start + 70 * day), to: retry).state!
        #expect(recovered.status == .active)
        #expect(recovered.gracePeriodExpiresAt == nil)
        #expect(recovered.isEntitled(at: factory.date(start + 41 * day)))
    }

    @Test("EXPIRED ends the subscription with EXPIRED_<subtype> and archives it", arguments: ["VOLUNTARY", "BILLING_RETRY", "PRICE_INCREASE", "PRODUCT_NOT_FOR_SALE", nil])
    func expired(subtype: String?) {
        let decision = apply(factory.event("EXPIRED", subtype, signedAt: start + 30 * day, status: 2, autoRenew: 0), to: subscribed())
        let reason = "EXPIRED_\(subtype ?? "OTHER")"
        #expect(decision.state!.status == .expired)
        #expect(decision.state!.endReason == reason)
        #expect(!decision.state!.willRenew)
        #expect(!decision.state!.isEntitled(at: now))
        #expect(decision.effects == [.ended(reason: reason, transactionId: "2000000000000001-0", at: factory.date(start + 30 * day))])
    }

    @Test("REFUND of the current period ends access at revocationDate; REFUND_REVERSED reinstates it")
    func refundAndReversal() {
        let refundAt = start + 3 * day
        let refund = apply(factory.event("REFUND", signedAt: refundAt, status: 5, revocationDate: refundAt, revocationType: "REFUND_FULL"), to: subscribed())
        #expect(refund.state!.status == .refunded)
        #expect(refund.state!.endReason == "REFUND")
        #expect(refund.state!.revokedAt == factory.date(refundAt))
        #expect(!refund.state!.isEntitled(at: now))
        #expect(refund.effects == [.ended(reason: "REFUND", transactionId: "2000000000000001-0", at: factory.date(refundAt))])
        let reversed = apply(factory.event("REFUND_REVERSED", signedAt: start + 4 * day), to: refund.state!)
        #expect(reversed.state!.status == .active)
        #expect(reversed.state!.endReason == nil)
        #expect(reversed.state!.isEntitled(at: now))
        #expect(reversed.effects == [.refundReversed(transactionId: "2000000000000001-0")])
    }

    @Test("REFUND of an earlier period leaves the current one active")
    func refundOfEarlierPeriod() {
        let renewed = apply(factory.event("DID_RENEW", signedAt: start + 30 * day, period: 1), to: subscribed()).state!
        let refund = apply(factory.event("REFUND", signedAt: start + 35 * day, period: 0, status: 1, revocationDate: start + 35 * day, revocationType: "REFUND_FULL"), to: renewed)
        #expect(refund.outcome == .applied)
        #expect(refund.state!.status == .active)
        #expect(refund.state!.expiresAt == renewed.expiresAt)
        #expect(refund.state!.latestTransactionId == "2000000000000001-1")
        #expect(refund.state!.lastEventType == "REFUND")
        #expect(refund.effects == [.earlierPeriodRefunded(transactionId: "2000000000000001-0", milliPercent: nil)])
        let reversed = apply(factory.event("REFUND_REVERSED", signedAt: start + 36 * day, period: 0), to: refund.state!)
        #expect(reversed.state!.expiresAt == renewed.expiresAt)
        #expect(reversed.effects == [.refundReversed(transactionId: "2000000000000001-0")])
    }

    @Test("a prorated refund of an earlier period carries its percentage")
    func proratedEarlierRefund() {
        let renewed = apply(factory.event("DID_RENEW", signedAt: start + 30 * day, period: 1), to: subscribed()).state!
        var event = factory.event("REFUND", signedAt: start + 35 * day, period: 0, status: 1, revocationDate: start + 35 * day, revocationType: "REFUND_PRORATED")
        event.transaction.revocationPercentage = 42_500
        #expect(apply(event, to: renewed).effects == [.earlierPeriodRefunded(transactionId: "2000000000000001-0", milliPercent: 42_500)])
    }

    @Test("REVOKE (family sharing) ends access as revoked")
    func familyRevoke() {
        let revokeAt = start + 3 * day
        let decision = apply(
            factory.event("REVOKE", signedAt: revokeAt, status: 5, revocationDate: revokeAt, revocationType: "FAMILY_REVOKE", ownership: "FAMILY_SHARED"),
            to: subscribed())
        #expect(decision.state!.status == .revoked)
        #expect(decision.state!.endReason == "REVOKE")
        #expect(decision.state!.ownership == "FAMILY_SHARED")
        #expect(decision.effects == [.ended(reason: "REVOKE", transactionId: "2000000000000001-0", at: factory.date(revokeAt))])
    }

    @Test("RENEWAL_EXTENDED moves expiresAt; the status stays")
    func renewalExtended() {
        let decision = apply(factory.event("RENEWAL_EXTENDED", signedAt: start + 4 * day, expiresDate: start + 37 * day), to: subscribed())
        #expect(decision.effects == [.periodExtended(transactionId: "2000000000000001-0", until: factory.date(start + 37 * day))])
        let state = decision.state!
        #expect(state.expiresAt == factory.date(start + 37 * day))
        #expect(state.status == .active)
    }

    @Test("PRICE_INCREASE records consent, from the renewal info or the subtype")
    func priceIncrease() {
        let pending = apply(factory.event("PRICE_INCREASE", "PENDING", signedAt: start + day, priceIncreaseStatus: 0), to: subscribed()).state!
        #expect(pending.priceIncrease == .pending)
        let accepted = apply(factory.event("PRICE_INCREASE", "ACCEPTED", signedAt: start + 2 * day, renewalInfo: false), to: pending).state!
        #expect(accepted.priceIncrease == .accepted)
        #expect(accepted.status == .active)
    }

    @Test("a notification type Apple adds later still applies its snapshot")
    func unknownType() {
        let decision = apply(factory.event("SOMETHING_NEW", "ODD", signedAt: start + day, status: 1, autoRenew: 0), to: subscribed())
        #expect(decision.outcome == .applied)
        #expect(decision.state!.lastEventType == "SOMETHING_NEW")
        #expect(!decision.state!.willRenew)
        #expect(decision.state!.status == .active)
    }

    @Test("notifications without a subscription transaction are no lifecycle events")
    func notSubscriptionEvents() {
        let test = VerifiedNotification(
            payload: NotificationPayload(notificationType: "TEST", notificationUUID: UUID().uuidString, signedDate: start), transaction: nil, renewalInfo: nil)
        #expect(SubscriptionEvent(test) == nil)
        var consumable = TransactionPayload(transactionId: "1", originalTransactionId: "1", productId: "credits.100", bundleId: nil, environment: .sandbox, signedDate: start)
        consumable.type = "Consumable"
        let charge = VerifiedNotification(
            payload: NotificationPayload(notificationType: "ONE_TIME_CHARGE", notificationUUID: UUID().uuidString, signedDate: start), transaction: consumable, renewalInfo: nil)
        #expect(SubscriptionEvent(charge) == nil)
        #expect(SubscriptionEvent(claimOf: consumable, by: UUID()) == nil)
    }

    @Test("a duplicate changes nothing; an older event is out of order and replay gives the in-order state")
    func ordering() {
        let subscribe = factory.event("SUBSCRIBED", "INITIAL_BUY", signedAt: start)
        let renew = factory.event("DID_RENEW", signedAt: start + 30 * day, period: 1)
        let first = Lifecycle.apply(subscribe, to: nil, now: now).state!
        #expect(Lifecycle.apply(subscribe, to: first, now: now) == .init(state: first, effects: [], outcome: .duplicate))
        let renewed = Lifecycle.apply(renew, to: nil, now: now).state!
        let late = Lifecycle.apply(subscribe, to: renewed, now: now)
        #expect(late.outcome == .outOfOrder)
        #expect(late.state == renewed)
        #expect(Lifecycle.replay([renew, subscribe, renew], now: now).state == Lifecycle.apply(renew, to: first, now: now).state)
    }

    @Test("events signed in the same millisecond are ordered by id, whatever the delivery order")
    func equalSignedDates() {
        let off = factory.event("DID_CHANGE_RENEWAL_STATUS", "AUTO_RENEW_DISABLED", signedAt: start + day, autoRenew: 0, id: "a")
        let on = factory.event("DID_CHANGE_RENEWAL_STATUS", "AUTO_RENEW_ENABLED", signedAt: start + day, id: "b")
        let subscribe = factory.event("SUBSCRIBED", "INITIAL_BUY", signedAt: start)
        let forward = factory.applied([subscribe, off, on], now: now)
        let backward = factory.applied([subscribe, on, off], now: now)
        #expect(forward == backward)
        #expect(forward?.willRenew == true)
    }

    @Test("claims: create an unknown subscription for the claimant, link an orphan, never roll the period back")
    func claims() {
        let claimant = UUID()
        var orphanFactory = factory
        orphanFactory.account = UUID()
        var transaction = factory.event("SUBSCRIBED", "INITIAL_BUY", signedAt: start).transaction
        transaction.appAccountToken = nil
        transaction.signedDate = start + 2 * day
        let claim = SubscriptionEvent(claimOf: transaction, by: claimant)!
        let created = Lifecycle.apply(claim, to: nil, now: now).state!
        #expect(created.accountId == claimant)
        #expect(created.status == .active)
        #expect(created.lastEventType == SubscriptionEvent.clientTransactionType)

        var renewed = apply(factory.event("DID_RENEW", signedAt: start + 30 * day, period: 1), to: subscribed()).state!
        renewed.accountId = nil
        var oldTransaction = transaction
        oldTransaction.signedDate = start + 31 * day
        let linked = Lifecycle.apply(SubscriptionEvent(claimOf: oldTransaction, by: claimant)!, to: renewed, now: now).state!
        #expect(linked.accountId == claimant)
        #expect(linked.expiresAt == renewed.expiresAt)
        #expect(linked.latestTransactionId == renewed.latestTransactionId)

        let owned = subscribed()
        let notMoved = Lifecycle.apply(SubscriptionEvent(claimOf: oldTransaction, by: claimant)!, to: owned, now: now).state!
        #expect(notMoved.accountId == factory.account)
    }
}
