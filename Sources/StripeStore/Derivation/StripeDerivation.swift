import AppStoreModels
import Entitlements
import Foundation
import Subscriptions

/// A Stripe subscription's state and paid periods, derived from what was read of it (``StripeSubscriptionFacts``) — a
/// pure function of that set, so any order of events and duplicates ends in the same state. It yields the same
/// ``Lifecycle/Derivation`` as the App Store's facts do, so the credit rules, events and status treat both stores alike.
///
/// Status mapping:
/// - `trialing` → active in a free trial (the catalogue's trial cap applies); `active` → active;
/// - `past_due` → grace period for ``Settings/gracePeriod`` after the last paid period, then billing retry;
/// - `incomplete` (first payment not made) and `paused` (a trial ended without a payment method) → billing retry: not
///   entitled, waiting for a payment;
/// - `unpaid`, `incomplete_expired` → expired, `EXPIRED_BILLING_RETRY`; `canceled` → expired, `EXPIRED_VOLUNTARY`
///   (or `EXPIRED_BILLING_RETRY` when Stripe cancelled it for failed payments);
/// - `cancel_at_period_end` or a `cancel_at` → `willRenew: false`;
/// - a full refund of the period in force → refunded; a partial one keeps access and takes back its share of credits;
/// - an open dispute of the period in force suspends access (`revoked`, reason `DISPUTED`) until it is won; a lost one
///   takes the period back (`revoked`, `DISPUTE_LOST`).
public enum StripeDerivation {
    public struct Settings: Sendable, Equatable {
        /// How long `past_due` keeps access after the last paid period ends (`STOREKEEPER_STRIPE_GRACE_DAYS`).
        public var gracePeriod: TimeInterval
        /// The prices the catalogue sells (`nil`: any). A subscription to another is recorded with no account — it
        /// entitles nobody — until the catalogue sells it and the subscription is derived again (`stripe sync`).
        public var prices: Set<String>?

        public init(gracePeriod: TimeInterval = 3 * 86_400, prices: Set<String>? = nil) {
            self.gracePeriod = gracePeriod
            self.prices = prices
        }
    }

    public static func derive(_ facts: StripeSubscriptionFacts, settings: Settings = Settings()) -> Lifecycle.Derivation {
        let subscription = facts.subscription
        let periods = PaidPeriod.linked(facts.invoices.compactMap { period(of: $0, facts: facts) })
        let item = subscription.primaryItem
        let inForce = periods.last
        let start = inForce?.start ?? item.map { date($0.currentPeriodStart) } ?? date(subscription.created)
        let end = inForce?.end ?? item.map { date($0.currentPeriodEnd) } ?? start
        let disputes = inForce.map { period in facts.invoices.first { $0.id == period.key }.map { facts.disputes(of: $0) } ?? [] } ?? []
        var (status, endReason) = verdict(of: subscription)
        var accessEndsAt: Date?
        if let endedAt = subscription.endedAt.map(date), endedAt < end { accessEndsAt = endedAt }
        if let lost = disputes.first(where: \.isLost) {
            (status, endReason) = (.revoked, .unknown("DISPUTE_LOST"))
            accessEndsAt = min(accessEndsAt ?? .distantFuture, date(lost.created))
        } else if let open = disputes.first(where: \.isOpen) {
            (status, endReason) = (.revoked, .unknown("DISPUTED"))
            accessEndsAt = min(accessEndsAt ?? .distantFuture, date(open.created))
        } else if let revocation = inForce?.revocation, revocation.prorated == nil {
            (status, endReason) = (.refunded, .refund)
            accessEndsAt = min(accessEndsAt ?? .distantFuture, revocation.date)
        }
        // Whether Stripe bills the next period: a refund or a dispute ends access to the period, not the subscription,
        // which Stripe goes on billing unless it is cancelled (an app that wants the refund to end it cancels it too).
        let billed = [.active, .gracePeriod].contains(verdict(of: subscription).0)
        let willRenew = billed && !subscription.cancelAtPeriodEnd && subscription.cancelAt.map { date($0) > end } != false
        let grace = status == .gracePeriod ? end.addingTimeInterval(settings.gracePeriod) : nil
        // While Stripe says the subscription is in good standing, it runs to the item's current period end: a renewal's
        // invoice is paid about an hour after the period starts, and access must not lapse meanwhile.
        let accessUntil = status == .active ? item.map { date($0.currentPeriodEnd) }.flatMap { $0 > end ? $0 : nil } : nil
        let newest = ([subscription.created] + facts.invoices.map(\.created) + facts.charges.map(\.created) + facts.disputes.map(\.created)).max()!
        let productId = inForce?.productId ?? item?.price.id ?? ""
        let state = SubscriptionState(
            originalTransactionId: subscription.id, accountId: settings.prices.map { $0.contains(productId) } == false ? nil : facts.account,
            productId: productId,
            environment: StoreEnvironment(livemode: subscription.livemode), status: status, willRenew: willRenew,
            autoRenewProductId: item?.price.id, pendingProductId: nil, purchaseDate: start, expiresAt: end,
            gracePeriodExpiresAt: grace, isTrial: status == .active && inForce?.isFreeOffer == true, ownership: .purchased,
            latestTransactionId: inForce?.key ?? subscription.id, lastEventType: .unknown("STRIPE"),
            lastEvent: EventPosition(signedDate: newest * 1000, eventId: subscription.id), endReason: endReason,
            revokedAt: status == .refunded || status == .revoked ? accessEndsAt : nil, offer: inForce?.offer, price: inForce?.price,
            billingPeriodKey: inForce?.key ?? subscription.id, accessUntil: accessUntil, store: .stripe)
        let accessEnd = accessEndsAt ?? (status == .gracePeriod ? grace : nil)
        return Lifecycle.Derivation(state: state, periods: periods, ends: [], accessEndsAt: accessEnd)
    }

    /// Stripe's status in Storekeeper's words, before refunds and disputes.
    static func verdict(of subscription: StripeSubscription) -> (SubscriptionStatus, EndReason?) {
        switch subscription.status {
        case .trialing, .active: return (.active, nil)
        case .pastDue: return (.gracePeriod, nil)
        case .incomplete, .paused: return (.billingRetry, nil)
        case .unpaid, .incompleteExpired: return (.expired, .expired("BILLING_RETRY"))
        case .canceled:
            let billing = ["payment_failed", "payment_disputed"].contains(subscription.cancellationDetails?.reason ?? "")
            return (.expired, .expired(billing ? "BILLING_RETRY" : "VOLUNTARY"))
        case .unknown: return (.billingRetry, nil)
        }
    }

    /// The paid period of a paid invoice of the subscription: its subscription line (the newest period, the larger
    /// amount on a tie — an upgrade's charge rather than its credit), priced at the line's full price per period (what
    /// the proration rules compare), refunded in the share its charges were.
    static func period(of invoice: StripeInvoice, facts: StripeSubscriptionFacts) -> PaidPeriod? {
        guard invoice.isPaid, invoice.subscription == facts.subscription.id,
            let line = invoice.lines.data.filter({ $0.priceId != nil && $0.period.end > $0.period.start })
                .max(by: { ($0.period.end, $0.amount) < ($1.period.end, $1.amount) }),
            let priceId = line.priceId
        else { return nil }
        let unit = line.pricing?.unitAmountDecimal.flatMap(StripeAmount.minorUnits(decimal:))
        let price = unit.map { StripeAmount.milliunits($0 * max(line.quantity ?? 1, 1), currency: invoice.currency) }
        let start = date(line.period.start)
        let trial = facts.subscription.trialEnd.map { date($0) > start } == true && invoice.amountPaid == 0
        return PaidPeriod(
            key: invoice.id, transactionId: invoice.id, transactionIds: [invoice.id], productId: priceId, start: start,
            end: date(line.period.end), price: price,
            offer: trial ? SubscriptionState.Offer(type: .introductory, identifier: nil, discountType: .freeTrial, period: nil) : nil,
            revocation: revocation(of: invoice, facts: facts), signedAt: invoice.created * 1000, currency: invoice.currency.uppercased(),
            charged: StripeAmount.milliunits(invoice.amountPaid, currency: invoice.currency))
    }

    /// What refunds and lost disputes took back of an invoice: everything (a lost dispute, or refunds of the whole
    /// amount), or the refunded share in milli-percent.
    static func revocation(of invoice: StripeInvoice, facts: StripeSubscriptionFacts) -> PaidPeriod.Revocation? {
        if let lost = facts.disputes(of: invoice).first(where: \.isLost) {
            return PaidPeriod.Revocation(date: date(lost.created), type: "REFUND_FULL", milliPercent: nil)
        }
        let charges = facts.charges(of: invoice)
        let paid = charges.reduce(Int64(0)) { $0 + $1.amount }
        let refunded = charges.reduce(Int64(0)) { $0 + $1.amountRefunded }
        guard refunded > 0, let at = charges.compactMap(\.refundedAt).max() else { return nil }
        if refunded >= paid { return PaidPeriod.Revocation(date: date(at), type: "REFUND_FULL", milliPercent: nil) }
        let milliPercent = Int32(clamping: refunded * 100_000 / max(paid, 1))
        return PaidPeriod.Revocation(date: date(at), type: "REFUND_PRORATED", milliPercent: milliPercent, keepsAccess: true)
    }

    static func date(_ seconds: Int64) -> Date { Date(timeIntervalSince1970: TimeInterval(seconds)) }
}
