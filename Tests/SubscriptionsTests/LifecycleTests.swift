import AppStoreModels
import Foundation
import Testing

@testable import Subscriptions

/// Builds events of one subscription at given instants (milliseconds), as Apple would sign them.
struct EventFactory {
    var originalTransactionId = "2000000000000001"
    var account = UUID(uuidString: "6f1d4d5e-8a1a-4b53-9c1e-1b2f3a4b5c6d")!
    let day: Int64 = 86_400_000
    let start: Int64 = 1_767_225_600_000  // 2026-01-01T00:00:00Z

    func event(
        _ type: String, _ subtype: String? = nil, signedAt: Int64, period: Int = 0, status: Int32? = 1,
        autoRenew: Int32 = 1, product: String = "pro.monthly", autoRenewProduct: String? = nil,
        expirationIntent: Int32? = nil, gracePeriodEnd: Int64? = nil, offerDiscountType: String? = nil,
        revocationDate: Int64? = nil, revocationType: String? = nil, ownership: String = "PURCHASED"
    ) -> SubscriptionEvent {
        var transaction = TransactionPayload(
            transactionId: "\(originalTransactionId)-\(period)", originalTransactionId: originalTransactionId,
            productId: product, bundleId: "com.example.app", environment: .sandbox, signedDate: signedAt)
        transaction.purchaseDate = start + Int64(period) * 30 * day
        transaction.expiresDate = start + Int64(period + 1) * 30 * day
        transaction.appAccountToken = account.uuidString
        transaction.offerDiscountType = offerDiscountType
        transaction.revocationDate = revocationDate
        transaction.revocationType = revocationType
        transaction.inAppOwnershipType = ownership
        var renewal = RenewalInfoPayload(
            originalTransactionId: originalTransactionId, productId: product, environment: .sandbox, signedDate: signedAt)
        renewal.autoRenewStatus = autoRenew
        renewal.autoRenewProductId = autoRenewProduct ?? product
        renewal.expirationIntent = expirationIntent
        renewal.gracePeriodExpiresDate = gracePeriodEnd
        return SubscriptionEvent(
            notificationType: type, subtype: subtype, signedDate: signedAt, appleStatus: status, environment: "Sandbox",
            transaction: transaction, renewalInfo: renewal)
    }

    func date(_ milliseconds: Int64) -> Date { Date(timeIntervalSince1970: Double(milliseconds) / 1000) }
}

@Suite("Lifecycle rules")
struct LifecycleTests {
    let factory = EventFactory()
    var now: Date { factory.date(factory.start + 5 * factory.day) }

    @Test("SUBSCRIBED/INITIAL_BUY creates an active subscription linked to the appAccountToken")
    func subscribe() {
        let decision = Lifecycle.apply(factory.event("SUBSCRIBED", "INITIAL_BUY", signedAt: factory.start), to: nil, now: now)
        #expect(decision.applied)
        #expect(decision.state.status == .active)
        #expect(decision.state.accountId == factory.account)
        #expect(decision.state.willRenew)
        #expect(decision.state.expiresAt == factory.date(factory.start + 30 * factory.day))
        #expect(decision.state.lastEventType == "SUBSCRIBED")
    }

    @Test("DID_RENEW moves the period forward")
    func renew() {
        let first = Lifecycle.apply(factory.event("SUBSCRIBED", "INITIAL_BUY", signedAt: factory.start), to: nil, now: now).state
        let renewed = Lifecycle.apply(
            factory.event("DID_RENEW", signedAt: factory.start + 30 * factory.day, period: 1), to: first, now: now
        ).state
        #expect(renewed.expiresAt == factory.date(factory.start + 60 * factory.day))
        #expect(renewed.purchaseDate == factory.date(factory.start + 30 * factory.day))
        #expect(renewed.status == .active)
    }

    @Test("AUTO_RENEW_DISABLED keeps access until expiresAt; ENABLED turns renewal back on")
    func renewalStatus() {
        let first = Lifecycle.apply(factory.event("SUBSCRIBED", "INITIAL_BUY", signedAt: factory.start), to: nil, now: now).state
        let off = Lifecycle.apply(
            factory.event("DID_CHANGE_RENEWAL_STATUS", "AUTO_RENEW_DISABLED", signedAt: factory.start + factory.day, autoRenew: 0),
            to: first, now: now
        ).state
        #expect(!off.willRenew)
        #expect(off.isEntitled(at: now))
        #expect(off.expiresAt == first.expiresAt)
        let on = Lifecycle.apply(
            factory.event("DID_CHANGE_RENEWAL_STATUS", "AUTO_RENEW_ENABLED", signedAt: factory.start + 2 * factory.day),
            to: off, now: now
        ).state
        #expect(on.willRenew)
    }

    @Test("EXPIRED ends the subscription with EXPIRED_<subtype> as its reason", arguments: ["VOLUNTARY", "BILLING_RETRY", "PRICE_INCREASE", "PRODUCT_NOT_FOR_SALE"])
    func expired(subtype: String) {
        let first = Lifecycle.apply(factory.event("SUBSCRIBED", "INITIAL_BUY", signedAt: factory.start), to: nil, now: now).state
        let ended = Lifecycle.apply(
            factory.event("EXPIRED", subtype, signedAt: factory.start + 30 * factory.day, status: 2, autoRenew: 0),
            to: first, now: now
        ).state
        #expect(ended.status == .expired)
        #expect(ended.endReason == "EXPIRED_\(subtype)")
        #expect(!ended.willRenew)
        #expect(!ended.isEntitled(at: now))
    }

    @Test("an older snapshot never rolls the state back, but still links an unknown account")
    func staleSnapshot() {
        var factory = self.factory
        let renewed = Lifecycle.apply(
            factory.event("DID_RENEW", signedAt: factory.start + 30 * factory.day, period: 1), to: nil, now: now
        ).state
        let stale = Lifecycle.apply(factory.event("SUBSCRIBED", "INITIAL_BUY", signedAt: factory.start), to: renewed, now: now)
        #expect(!stale.applied)
        #expect(stale.state == renewed)

        factory.account = UUID()
        var unlinked = renewed
        unlinked.accountId = nil
        let linked = Lifecycle.apply(factory.event("SUBSCRIBED", "INITIAL_BUY", signedAt: factory.start), to: unlinked, now: now)
        #expect(!linked.applied)
        #expect(linked.state.accountId == factory.account)
    }

    @Test("every order of a sequence, with duplicates, ends in the in-order state")
    func orderIndependence() {
        let events = [
            factory.event("SUBSCRIBED", "INITIAL_BUY", signedAt: factory.start),
            factory.event("DID_CHANGE_RENEWAL_STATUS", "AUTO_RENEW_DISABLED", signedAt: factory.start + factory.day, autoRenew: 0),
            factory.event("DID_CHANGE_RENEWAL_STATUS", "AUTO_RENEW_ENABLED", signedAt: factory.start + 2 * factory.day),
            factory.event("DID_RENEW", signedAt: factory.start + 30 * factory.day, period: 1),
            factory.event("EXPIRED", "VOLUNTARY", signedAt: factory.start + 60 * factory.day, period: 1, status: 2, autoRenew: 0),
        ]
        func replay(_ sequence: [SubscriptionEvent]) -> SubscriptionState? {
            sequence.reduce(nil as SubscriptionState?) { Lifecycle.apply($1, to: $0, now: now).state }
        }
        let expected = replay(events)
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<1_000 {
            var shuffled = (events + events.filter { _ in Bool.random(using: &generator) }).shuffled(using: &generator)
            if Bool.random(using: &generator) { shuffled.append(events.randomElement(using: &generator)!) }
            #expect(replay(shuffled) == expected)
        }
    }

    @Test("grace period and billing retry; refunds and family revocation")
    func failureStates() {
        let first = Lifecycle.apply(factory.event("SUBSCRIBED", "INITIAL_BUY", signedAt: factory.start), to: nil, now: now).state
        let graceEnd = factory.start + 36 * factory.day
        let grace = Lifecycle.apply(
            factory.event("DID_FAIL_TO_RENEW", "GRACE_PERIOD", signedAt: factory.start + 30 * factory.day, status: 4, gracePeriodEnd: graceEnd),
            to: first, now: now
        ).state
        #expect(grace.status == .gracePeriod)
        #expect(grace.gracePeriodExpiresAt == factory.date(graceEnd))
        #expect(grace.isEntitled(at: factory.date(graceEnd - 1)))
        #expect(!grace.isEntitled(at: factory.date(graceEnd)))

        let retry = Lifecycle.apply(factory.event("DID_FAIL_TO_RENEW", signedAt: factory.start + 30 * factory.day, status: 3), to: first, now: now).state
        #expect(retry.status == .billingRetry)
        #expect(!retry.isEntitled(at: factory.date(factory.start + 31 * factory.day)))

        let refunded = Lifecycle.apply(
            factory.event("REFUND", signedAt: factory.start + 3 * factory.day, status: 2, revocationDate: factory.start + 3 * factory.day, revocationType: "REFUND_FULL"),
            to: first, now: now
        ).state
        #expect(refunded.status == .refunded)
        #expect(refunded.endReason == "REFUND")

        let revoked = Lifecycle.apply(
            factory.event("REVOKE", signedAt: factory.start + 3 * factory.day, status: 5, revocationDate: factory.start + 3 * factory.day, revocationType: "FAMILY_REVOKE", ownership: "FAMILY_SHARED"),
            to: first, now: now
        ).state
        #expect(revoked.status == .revoked)
        #expect(revoked.endReason == "REVOKE")
    }
}
