import Credits
import Events
import Foundation
import Subscriptions
import Testing

/// The events a customer's subscription history is worth, written from what an app's service must hear (Apple's
/// notification meanings), not from the rules' code: one event per change, none for a repeat.
@Suite struct SubscriptionChangesTests {
    static let catalogue = TierCatalogue(
        meters: [.init(id: "ai", displayName: "AI")], free: .init(displayName: "Free", allowances: [:]),
        tiers: [
            .init(
                id: "max", level: 1, displayName: "Max", products: [.init(id: "max.monthly", period: "P1M", price: 19_990, currency: "USD")],
                allowances: [:]),
            .init(
                id: "pro", level: 2, displayName: "Pro", products: [.init(id: "pro.monthly", period: "P1M", price: 9_990, currency: "USD")],
                allowances: [:]),
            .init(
                id: "lite", level: 3, displayName: "Lite", products: [.init(id: "lite.monthly", period: "P1M", price: 4_990, currency: "USD")],
                allowances: [:]),
        ], topUps: [])
    static let alice = AccountID("alice")!
    static let start = Date(timeIntervalSince1970: 1_790_000_000)

    /// A subscription of `alice` in billing period `period` (day offsets of 30).
    static func state(
        _ status: SubscriptionStatus, period: Int = 0, product: String = "pro.monthly", account: AccountID? = alice, willRenew: Bool = true,
        pending: String? = nil, endReason: String? = nil, expiresExtra: TimeInterval = 0, signed: Int64 = 1
    ) -> SubscriptionState {
        SubscriptionState(
            originalTransactionId: "1000", accountId: account, productId: product, environment: .sandbox, status: status,
            willRenew: willRenew, autoRenewProductId: pending ?? product, pendingProductId: pending,
            purchaseDate: start.addingTimeInterval(Double(period) * 30 * 86_400),
            expiresAt: start.addingTimeInterval(Double(period + 1) * 30 * 86_400 + expiresExtra), gracePeriodExpiresAt: nil,
            isTrial: false, ownership: .purchased, latestTransactionId: "t\(period)", lastEventType: NotificationType("X"),
            lastEvent: EventPosition(signedDate: signed, eventId: "e\(signed)"), endReason: endReason.map(EndReason.init),
            billingPeriodKey: "p\(period)")
    }

    static func types(_ stored: SubscriptionState?, _ state: SubscriptionState) -> [String] {
        SubscriptionChanges.events(from: stored, to: state, catalogue: catalogue, cause: EventCause()).map(\.type.rawValue)
    }

    @Test("A first purchase is subscription.started; a subscription nobody owns tells nobody, and its first owner hears started")
    func started() {
        #expect(Self.types(nil, Self.state(.active)) == ["subscription.started"])
        #expect(Self.types(nil, Self.state(.active, account: nil)) == [])
        #expect(Self.types(Self.state(.active, account: nil), Self.state(.active)) == ["subscription.started"])
    }

    @Test("A full lifecycle: renew, upgrade, billing issue, grace, recovery, expiry, refund, reversal — one event each, in that order")
    func lifecycle() {
        let steps: [SubscriptionState] = [
            Self.state(.active),
            Self.state(.active, period: 1),
            Self.state(.active, period: 2, product: "max.monthly"),
            Self.state(.billingRetry, period: 2, product: "max.monthly"),
            Self.state(.gracePeriod, period: 2, product: "max.monthly"),
            Self.state(.active, period: 3, product: "max.monthly"),
            Self.state(.expired, period: 3, product: "max.monthly", willRenew: false, endReason: "EXPIRED_VOLUNTARY"),
            Self.state(.refunded, period: 3, product: "max.monthly", willRenew: false, endReason: "REFUND"),
            Self.state(.expired, period: 3, product: "max.monthly", willRenew: false, endReason: "EXPIRED_VOLUNTARY"),
        ]
        var stored: SubscriptionState?
        var seen: Set<String> = []
        var emitted: [String] = []
        for state in steps {
            for draft in SubscriptionChanges.events(from: stored, to: state, catalogue: Self.catalogue, cause: EventCause())
            where seen.insert(draft.key).inserted {
                emitted.append(draft.type.rawValue)
            }
            stored = state
        }
        #expect(
            emitted == [
                "subscription.started", "subscription.renewed", "subscription.plan_changed", "subscription.billing_issue",
                "subscription.grace_period_started", "subscription.recovered", "subscription.expired", "subscription.refunded",
                "subscription.refund_reversed",
            ])
    }

    @Test("The same transition reached twice (a replay, a duplicate, another delivery order) has the same key")
    func stableKeys() {
        let first = SubscriptionChanges.events(
            from: Self.state(.active), to: Self.state(.active, period: 1), catalogue: Self.catalogue, cause: EventCause())
        let again = SubscriptionChanges.events(
            from: Self.state(.active), to: Self.state(.active, period: 1), catalogue: Self.catalogue, cause: EventCause(eventId: "other"))
        #expect(first.map(\.key) == again.map(\.key))
        #expect(
            SubscriptionChanges.events(
                from: Self.state(.active, period: 1), to: Self.state(.active, period: 1), catalogue: Self.catalogue, cause: EventCause()
            ).isEmpty)
    }

    @Test("Plan changes say upgrade, downgrade or crossgrade by Apple's levels, and whether they apply now or at renewal")
    func planChanges() throws {
        let upgrade = try #require(
            SubscriptionChanges.events(
                from: Self.state(.active), to: Self.state(.active, period: 1, product: "max.monthly"), catalogue: Self.catalogue, cause: EventCause()
            ).first)
        #expect(upgrade.type == .subscriptionPlanChanged)
        #expect(upgrade.change.direction == "upgrade" && upgrade.change.effective == "now")
        #expect(upgrade.change.fromProductId == "pro.monthly" && upgrade.change.toProductId == "max.monthly")
        let scheduled = try #require(
            SubscriptionChanges.events(
                from: Self.state(.active), to: Self.state(.active, pending: "lite.monthly"), catalogue: Self.catalogue, cause: EventCause()
            ).first)
        #expect(scheduled.type == .subscriptionPlanChanged)
        #expect(scheduled.change.direction == "downgrade" && scheduled.change.effective == "next_renewal")
    }

    @Test("Turning auto-renew off and on is heard while the subscription runs, not when it ends")
    func renewalPreference() {
        #expect(Self.types(Self.state(.active), Self.state(.active, willRenew: false, signed: 2)) == ["subscription.renewal_disabled"])
        #expect(Self.types(Self.state(.active, willRenew: false), Self.state(.active, signed: 3)) == ["subscription.renewal_enabled"])
        #expect(Self.types(Self.state(.active), Self.state(.expired, willRenew: false, endReason: "EXPIRED_VOLUNTARY")) == ["subscription.expired"])
    }

    @Test("A transfer tells the new owner and the previous one; a revocation and a renewal extension are their own events")
    func transfersRevocationsExtensions() throws {
        let bob = AccountID("bob")!
        let moved = SubscriptionChanges.events(
            from: Self.state(.active), to: Self.state(.active, account: bob), catalogue: Self.catalogue, cause: EventCause())
        #expect(moved.map(\.type) == [.subscriptionTransferred, .subscriptionTransferred])
        #expect(Set(moved.map(\.account)) == [Self.alice, bob])
        #expect(moved.allSatisfy { $0.change.fromAccountId == "alice" && $0.change.toAccountId == "bob" })
        #expect(Self.types(Self.state(.active), Self.state(.revoked, willRenew: false, endReason: "REVOKE")) == ["subscription.revoked"])
        let extended = SubscriptionChanges.events(
            from: Self.state(.active), to: Self.state(.active, expiresExtra: 7 * 86_400), catalogue: Self.catalogue, cause: EventCause())
        #expect(extended.map(\.type) == [.subscriptionExtended])
        #expect(extended.first?.change.previousExpiresAt == Self.state(.active).expiresAt)
    }

    @Test("A billing retry that recovers in the same period is recovered; the expiry says why it ended")
    func recoveryAndReason() throws {
        #expect(Self.types(Self.state(.billingRetry), Self.state(.active, signed: 2)) == ["subscription.recovered"])
        let expired = try #require(
            SubscriptionChanges.events(
                from: Self.state(.billingRetry), to: Self.state(.expired, willRenew: false, endReason: "EXPIRED_BILLING_RETRY"),
                catalogue: Self.catalogue,
                cause: EventCause()
            ).first)
        #expect(expired.type == .subscriptionExpired && expired.change.reason == "EXPIRED_BILLING_RETRY")
    }

    @Test("A monthly-billed commitment: its renewal turned off or on is heard (access runs to its end); its months bill on without a word")
    func commitmentRenewal() {
        func month(_ period: Int, renewsTo: String?, willRenew: Bool = true, signed: Int64 = 1) -> SubscriptionState {
            var state = Self.state(.active, period: period, willRenew: willRenew, signed: signed)
            state.billingPlan = .monthly
            state.commitment = .init(
                period: period + 1, of: 12, endsAt: Self.start.addingTimeInterval(365 * 86_400), renewsTo: renewsTo, priceAfter: nil)
            return state
        }
        // Turned off: one renewal_disabled, dated at the commitment's end, while the next month still bills.
        let disabled = SubscriptionChanges.events(
            from: month(0, renewsTo: "pro.monthly"), to: month(0, renewsTo: nil, signed: 2), catalogue: Self.catalogue, cause: EventCause())
        #expect(disabled.map(\.type) == [.subscriptionRenewalDisabled])
        #expect(disabled.first?.change.expiresAt == Self.start.addingTimeInterval(365 * 86_400))
        #expect(Self.types(month(0, renewsTo: nil), month(0, renewsTo: "pro.monthly", signed: 3)) == ["subscription.renewal_enabled"])
        // The last month of a commitment that will not renew bills no more: nothing new to say.
        #expect(Self.types(month(10, renewsTo: nil), month(11, renewsTo: nil, willRenew: false)) == ["subscription.renewed"])
        // The app's post before Apple's notification (taken to renew), then Apple's renewal terms saying so: no event.
        #expect(Self.types(month(0, renewsTo: "pro.monthly"), month(0, renewsTo: "pro.monthly", signed: 2)).isEmpty)
    }

    @Test("Win-back offers: heard once when they first appear for a lapsed subscriber, not again while listed")
    func winBack() {
        var lapsed = Self.state(.expired, willRenew: false, endReason: "EXPIRED_VOLUNTARY")
        var offered = lapsed
        offered.winBackOfferIds = ["wb.half", "wb.month"]
        offered.lastEvent = EventPosition(signedDate: 2, eventId: "e2")
        let events = SubscriptionChanges.events(from: lapsed, to: offered, catalogue: Self.catalogue, cause: EventCause())
        #expect(events.map(\.type) == [.subscriptionWinBackEligible])
        #expect(events.first?.change.offerIds == ["wb.half", "wb.month"])
        lapsed.winBackOfferIds = ["wb.month"]
        #expect(Self.types(lapsed, offered).isEmpty, "a changed list is not a new appearance")
    }
}
