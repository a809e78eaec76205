import Entitlements
import Foundation
import Testing

@testable import Subscriptions

@Suite("Account status against the clock")
struct AccountStatusTests {
    let factory = EventFactory()

    func subscribed(trial: Bool = false) -> SubscriptionState {
        factory.derived([factory.event("SUBSCRIBED", "INITIAL_BUY", signedAt: factory.start, offerDiscountType: trial ? "FREE_TRIAL" : nil)])!
    }

    @Test("an unknown account is free and never had a subscription")
    func unknownAccount() {
        let status = AccountStatus.evaluate(subscriptions: [], hasFreeCredits: false, now: Date())
        #expect(status.state == .freeNoCredits)
        #expect(!status.entitled)
        #expect(!status.hadSubscription)
        #expect(AccountStatus.evaluate(subscriptions: [], hasFreeCredits: true, now: Date()).state == .freeWithCredits)
    }

    @Test("subscribed until expiresAt, free from that instant even without an EXPIRED notification")
    func clockRule() {
        let state = subscribed()
        let expiry = state.expiresAt!
        let before = AccountStatus.evaluate(subscriptions: [state], hasFreeCredits: false, now: expiry.addingTimeInterval(-1))
        #expect(before.state == .subscribed)
        #expect(before.entitled)
        #expect(before.nextChangeAt == expiry)
        let after = AccountStatus.evaluate(subscriptions: [state], hasFreeCredits: false, now: expiry)
        #expect(after.state == .freeNoCredits)
        #expect(!after.entitled)
        #expect(after.hadSubscription)
        #expect(after.subscription?.effectiveStatus(at: expiry) == .expired)
        #expect(after.nextChangeAt == nil)
    }

    @Test("a free-trial offer reports trial")
    func trial() {
        let status = AccountStatus.evaluate(subscriptions: [subscribed(trial: true)], hasFreeCredits: false, now: factory.date(factory.start + 1))
        #expect(status.state == .trial)
        #expect(status.entitled)
    }

    @Test("the entitled subscription wins over an ended one")
    func ranking() {
        var ended = subscribed()
        ended.originalTransactionId = "other"
        ended.status = .expired
        ended.expiresAt = factory.date(factory.start + 400 * factory.day)
        let status = AccountStatus.evaluate(subscriptions: [ended, subscribed()], hasFreeCredits: false, now: factory.date(factory.start + 1))
        #expect(status.state == .subscribed)
        #expect(status.subscription?.originalTransactionId == factory.originalTransactionId)
    }

    @Test("billing retry is not entitled; it ends when Apple's retry window closes")
    func billingRetry() {
        var state = subscribed()
        state.status = .billingRetry
        let expiry = state.expiresAt!
        let during = AccountStatus.evaluate(subscriptions: [state], hasFreeCredits: false, now: expiry.addingTimeInterval(86_400))
        #expect(during.state == .billingRetry)
        #expect(!during.entitled)
        let after = AccountStatus.evaluate(
            subscriptions: [state], hasFreeCredits: false, now: expiry.addingTimeInterval(SubscriptionState.billingRetryWindow))
        #expect(after.state == .freeNoCredits)
    }

    @Test(
        "a subscription on hold ends by the clock 60 days after its period: Apple's retry window, and the longest grace period and account hold Google Play allows together (30–60 days)"
    )
    func retryWindowOfEachStore() {
        let day: TimeInterval = 86_400
        for (store, window) in [(Store.googlePlay, 60 * day), (.appStore, 60 * day), (.stripe, 60 * day)] {
            var state = subscribed()
            state.store = store
            state.status = .billingRetry
            let expiry = state.expiresAt!
            #expect(state.nextChange(after: expiry.addingTimeInterval(day)) == expiry.addingTimeInterval(window), "\(store)")
            #expect(state.effectiveStatus(at: expiry.addingTimeInterval(window - 1)) == .billingRetry, "\(store)")
            #expect(state.effectiveStatus(at: expiry.addingTimeInterval(window)) == .expired, "\(store)")
            // A grace period that ran out without news is on hold until the same end.
            state.status = .gracePeriod
            state.gracePeriodExpiresAt = expiry.addingTimeInterval(3 * day)
            #expect(state.effectiveStatus(at: expiry.addingTimeInterval(4 * day)) == .billingRetry, "\(store)")
            #expect(state.nextChange(after: expiry.addingTimeInterval(4 * day)) == expiry.addingTimeInterval(window), "\(store)")
        }
    }
}
