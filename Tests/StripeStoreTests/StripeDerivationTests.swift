import Credits
import Foundation
import StripeStore
import Subscriptions
import Testing

/// The pure derivation of a Stripe subscription, without a database: each of Stripe's documented statuses, refunds and
/// disputes gives the state Storekeeper documents (docs/stripe.md), and any order of the objects read gives the same.
@Suite("Stripe derivation: Stripe's statuses in Storekeeper's words")
struct StripeDerivationTests {
    static let day: Int64 = 86_400
    static let start: Int64 = 1_767_225_600
    static let price = StripePrice(id: "price_pro_monthly", unitAmount: 999, currency: "usd", recurring: .init(interval: "month"))
    static let account = AccountID("5b0c2f0e-1d5e-4c83-9a2b-2f3c4d5e6f70")!

    static func subscription(_ status: StripeSubscription.Status, end: Int64 = start + 31 * day) -> StripeSubscription {
        StripeSubscription(
            id: "sub_1", customer: "cus_1", status: status, created: start,
            items: [.init(id: "si_1", price: price, currentPeriodStart: start, currentPeriodEnd: end)])
    }

    static func invoice(_ id: String, from: Int64, to: Int64, amount: Int64 = 999, intent: String = "pi_1") -> StripeInvoice {
        StripeInvoice(
            id: id, status: "paid", billingReason: "subscription_create", amountPaid: amount, currency: "usd", customer: "cus_1", created: from,
            subscription: "sub_1", lines: [.init(id: "il_\(id)", amount: amount, start: from, end: to, price: price.id, unitAmount: 999)],
            paymentIntents: amount > 0 ? [intent] : [])
    }

    static func derive(
        _ subscription: StripeSubscription, invoices: [StripeInvoice]? = nil, charges: [StripeCharge] = [], disputes: [StripeDispute] = []
    )
        -> SubscriptionState
    {
        let facts = StripeSubscriptionFacts(
            subscription: subscription, invoices: invoices ?? [invoice("in_1", from: start, to: start + 31 * day)], charges: charges,
            disputes: disputes, account: account)
        return StripeDerivation.derive(facts).state
    }

    @Test("each status: trialing and active entitle; past_due is grace then billing retry; the ended ones say why")
    func statuses() {
        let now = Date(timeIntervalSince1970: TimeInterval(Self.start + 5 * Self.day))
        let cases: [(StripeSubscription.Status, SubscriptionStatus, Bool, String?)] = [
            (.trialing, .active, true, nil), (.active, .active, true, nil), (.pastDue, .gracePeriod, true, nil),
            (.incomplete, .billingRetry, false, nil), (.paused, .billingRetry, false, nil), (.unknown("future"), .billingRetry, false, nil),
            (.unpaid, .expired, false, "EXPIRED_BILLING_RETRY"), (.incompleteExpired, .expired, false, "EXPIRED_BILLING_RETRY"),
            (.canceled, .expired, false, "EXPIRED_VOLUNTARY"),
        ]
        for (stripe, status, entitled, reason) in cases {
            let state = Self.derive(Self.subscription(stripe))
            #expect(state.status == status, "\(stripe.text)")
            #expect(state.isEntitled(at: now) == entitled, "\(stripe.text)")
            #expect(state.endReason?.text == reason, "\(stripe.text)")
            #expect(state.store == .stripe && state.accountId == Self.account)
        }
        var failed = Self.subscription(.canceled)
        failed.cancellationDetails = .init(reason: "payment_failed")
        #expect(Self.derive(failed).endReason?.text == "EXPIRED_BILLING_RETRY")
    }

    @Test("past_due keeps access for the grace days after the last paid period, then billing retry until the retry window ends")
    func grace() {
        // Renewed at day 31 and failed: Stripe has moved the item's period on, the last paid invoice ends at day 31.
        let state = Self.derive(Self.subscription(.pastDue, end: Self.start + 62 * Self.day))
        func at(_ days: Double) -> Date { Date(timeIntervalSince1970: TimeInterval(Self.start) + days * 86_400) }
        #expect(state.expiresAt == at(31))
        #expect(state.gracePeriodExpiresAt == at(34))
        #expect(state.effectiveStatus(at: at(33)) == .gracePeriod)
        #expect(state.effectiveStatus(at: at(35)) == .billingRetry)
        #expect(state.isEntitled(at: at(35)) == false)
        #expect(state.effectiveStatus(at: at(92)) == .expired)
    }

    @Test("renewal off: cancel_at_period_end or a cancel_at by the period's end; active runs to the item's period end")
    func renewal() {
        var subscription = Self.subscription(.active)
        #expect(Self.derive(subscription).willRenew)
        subscription.cancelAtPeriodEnd = true
        #expect(!Self.derive(subscription).willRenew)
        subscription.cancelAtPeriodEnd = false
        subscription.cancelAt = Self.start + 20 * Self.day
        #expect(!Self.derive(subscription).willRenew)
        // Renewed an hour ago, its invoice not paid yet: access holds to the new period's end.
        let renewing = Self.derive(Self.subscription(.active, end: Self.start + 62 * Self.day))
        #expect(renewing.isEntitled(at: Date(timeIntervalSince1970: TimeInterval(Self.start + 31 * Self.day + 3600))))
    }

    @Test("refunds: all of the charge ends the period in force; part of it keeps access and names the share")
    func refunds() {
        let full = StripeCharge(
            id: "ch_1", amount: 999, amountRefunded: 999, currency: "usd", paymentIntent: "pi_1", customer: "cus_1", created: Self.start,
            refunds: [.init(id: "re_1", amount: 999, created: Self.start + 2 * Self.day)])
        let refunded = Self.derive(Self.subscription(.active), charges: [full])
        #expect(refunded.status == .refunded && refunded.endReason == .refund)
        let part = StripeCharge(
            id: "ch_1", amount: 1000, amountRefunded: 250, currency: "usd", paymentIntent: "pi_1", customer: "cus_1", created: Self.start,
            refunds: [.init(id: "re_1", amount: 250, created: Self.start + 2 * Self.day)])
        let facts = StripeSubscriptionFacts(
            subscription: Self.subscription(.active),
            invoices: [Self.invoice("in_1", from: Self.start, to: Self.start + 31 * Self.day, amount: 1000)], charges: [part], account: Self.account)
        let derivation = StripeDerivation.derive(facts)
        #expect(derivation.state.status == .active)
        #expect(derivation.periods.first?.revocation?.milliPercent == 25_000 && derivation.periods.first?.revocation?.keepsAccess == true)
        // A charge of another PaymentIntent is not this invoice's.
        let other = StripeCharge(
            id: "ch_9", amount: 999, amountRefunded: 999, currency: "usd", paymentIntent: "pi_9", customer: "cus_1", created: Self.start)
        #expect(Self.derive(Self.subscription(.active), charges: [other]).status == .active)
    }

    @Test("disputes: open suspends, won restores, lost takes the period back")
    func disputes() {
        let charge = StripeCharge(id: "ch_1", amount: 999, currency: "usd", paymentIntent: "pi_1", customer: "cus_1", created: Self.start)
        func dispute(_ status: String) -> StripeDispute {
            StripeDispute(id: "dp_1", charge: "ch_1", paymentIntent: "pi_1", status: status, amount: 999, created: Self.start + 3 * Self.day)
        }
        #expect(Self.derive(Self.subscription(.active), charges: [charge], disputes: [dispute("needs_response")]).endReason?.text == "DISPUTED")
        #expect(Self.derive(Self.subscription(.active), charges: [charge], disputes: [dispute("won")]).status == .active)
        let lost = StripeDerivation.derive(
            StripeSubscriptionFacts(
                subscription: Self.subscription(.active), invoices: [Self.invoice("in_1", from: Self.start, to: Self.start + 31 * Self.day)],
                charges: [charge], disputes: [dispute("lost")], account: Self.account))
        #expect(lost.state.status == .revoked && lost.state.endReason?.text == "DISPUTE_LOST")
        #expect(lost.periods.first?.revocation != nil)
    }

    @Test("a trial's $0 invoice is a free-trial period; an always_invoice price change is an upgrade period from the change")
    func periods() {
        var trialing = Self.subscription(.trialing, end: Self.start + 7 * Self.day)
        trialing.trialStart = Self.start
        trialing.trialEnd = Self.start + 7 * Self.day
        let trial = StripeDerivation.derive(
            StripeSubscriptionFacts(
                subscription: trialing, invoices: [Self.invoice("in_0", from: Self.start, to: Self.start + 7 * Self.day, amount: 0)],
                account: Self.account))
        #expect(trial.state.isTrial && trial.periods.first?.isFreeOffer == true)

        let max = StripePrice(id: "price_max_monthly", unitAmount: 1999, currency: "usd", recurring: .init(interval: "month"))
        var upgradeInvoice = Self.invoice("in_2", from: Self.start + 15 * Self.day, to: Self.start + 31 * Self.day, amount: 516, intent: "pi_2")
        upgradeInvoice.lines = StripeList(data: [
            .init(
                id: "il_a", amount: -483, start: Self.start + 15 * Self.day, end: Self.start + 31 * Self.day, price: Self.price.id, unitAmount: 999),
            .init(id: "il_b", amount: 999, start: Self.start + 15 * Self.day, end: Self.start + 31 * Self.day, price: max.id, unitAmount: 1999),
        ])
        var upgraded = Self.subscription(.active)
        upgraded.items.data[0].price = max
        let derivation = StripeDerivation.derive(
            StripeSubscriptionFacts(
                subscription: upgraded, invoices: [upgradeInvoice, Self.invoice("in_1", from: Self.start, to: Self.start + 31 * Self.day)],
                account: Self.account))
        #expect(derivation.state.productId == "price_max_monthly")
        #expect(derivation.periods.last?.upgradedFrom == "in_1")
        #expect(derivation.periods.last?.price == 19_990, "the new price per period, in milliunits")
    }

    @Test("a price the catalogue does not sell: recorded, with no account, so it entitles nobody")
    func unknownPrice() {
        let facts = StripeSubscriptionFacts(
            subscription: Self.subscription(.active), invoices: [Self.invoice("in_1", from: Self.start, to: Self.start + 31 * Self.day)],
            account: Self.account)
        #expect(StripeDerivation.derive(facts, settings: .init(prices: ["price_other"])).state.accountId == nil)
        #expect(StripeDerivation.derive(facts, settings: .init(prices: ["price_pro_monthly"])).state.accountId == Self.account)
    }

    @Test("the same objects in any order derive the same state")
    func orderFree() {
        let invoices = [
            Self.invoice("in_1", from: Self.start, to: Self.start + 31 * Self.day),
            Self.invoice("in_2", from: Self.start + 31 * Self.day, to: Self.start + 59 * Self.day, intent: "pi_2"),
        ]
        let charges = [
            StripeCharge(id: "ch_1", amount: 999, currency: "usd", paymentIntent: "pi_1", customer: "cus_1", created: Self.start),
            StripeCharge(
                id: "ch_2", amount: 999, amountRefunded: 100, currency: "usd", paymentIntent: "pi_2", customer: "cus_1",
                created: Self.start + 31 * Self.day),
        ]
        let subscription = Self.subscription(.active, end: Self.start + 59 * Self.day)
        let expected = StripeDerivation.derive(
            StripeSubscriptionFacts(subscription: subscription, invoices: invoices, charges: charges, account: Self.account))
        for _ in 0..<20 {
            let shuffled = StripeDerivation.derive(
                StripeSubscriptionFacts(
                    subscription: subscription, invoices: invoices.shuffled(), charges: charges.shuffled(), account: Self.account))
            #expect(shuffled == expected)
        }
    }

    @Test("the account: client_reference_id, then metadata, then a link; conflicts named; invalid ids skipped")
    func accounts() {
        let a = "5b0c2f0e-1d5e-4c83-9a2b-2f3c4d5e6f70"
        let b = "user-42"
        #expect(StripeAccountClaim.resolve(checkoutReferences: [a], metadata: b, linked: nil) == (AccountID(a), [b]))
        #expect(StripeAccountClaim.resolve(checkoutReferences: [], metadata: b, linked: AccountID(a)).account == AccountID(b))
        #expect(
            StripeAccountClaim.resolve(checkoutReferences: [String(repeating: "x", count: 300)], metadata: nil, linked: AccountID(a)).account
                == AccountID(a))
        #expect(StripeAccountClaim.resolve(checkoutReferences: [], metadata: nil, linked: nil).account == nil)
    }

    @Test("event types: the ones Storekeeper listens to (docs/stripe.md) are read again; every other is only acknowledged")
    func eventKinds() {
        let cases: [(String, StripeEventKind)] = [
            ("checkout.session.completed", .checkoutCompleted), ("checkout.session.async_payment_succeeded", .checkoutCompleted),
            ("customer.subscription.created", .subscriptionChanged), ("customer.subscription.updated", .subscriptionChanged),
            ("customer.subscription.deleted", .subscriptionChanged), ("invoice.paid", .invoiceChanged), ("invoice.payment_failed", .invoiceChanged),
            ("charge.refunded", .chargeRefunded), ("charge.dispute.created", .disputeChanged), ("charge.dispute.closed", .disputeChanged),
            ("customer.created", .other("customer.created")), ("invoice.created", .other("invoice.created")),
            ("checkout.session.expired", .other("checkout.session.expired")), ("", .other("")),
        ]
        for (type, kind) in cases { #expect(StripeEventKind(type: type) == kind, "\(type)") }
    }

    @Test("amounts: minor units to milliunits by Stripe's currency lists")
    func amounts() {
        #expect(StripeAmount.milliunits(999, currency: "usd") == 9990)
        #expect(StripeAmount.milliunits(500, currency: "JPY") == 500_000)
        #expect(StripeAmount.milliunits(1500, currency: "kwd") == 1500)
        #expect(StripeAmount.milliunits(.max, currency: "usd") == .max)
        #expect(StripeAmount.minorUnits(milliunits: 9990, currency: "usd") == 999)
    }
}
