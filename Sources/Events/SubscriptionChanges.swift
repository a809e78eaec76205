import Credits
import Foundation
import Subscriptions

/// The events a subscription's change is worth: a pure function of the state stored before and the state derived
/// now. Each event's key names the change (the billing period it happened in, the renewal-preference fact, the new
/// expiry), so a change seen again — a replay, a duplicate, an order where the same transition is reached twice — is
/// the same event.
public enum SubscriptionChanges {
    /// - Parameters:
    ///   - stored: the state before; `nil` when the subscription was unknown or had no account.
    ///   - state: the state derived now. Without an account nobody is told anything (a claim or a purchase intent
    ///     later makes it the account's `subscription.started`).
    ///   - catalogue: decides whether a product change is an upgrade (Apple's level 1 is the highest).
    public static func events(from stored: SubscriptionState?, to state: SubscriptionState, catalogue: TierCatalogue, cause: EventCause)
        -> [EventDraft]
    {
        guard let account = state.accountId else { return [] }
        var drafts: [EventDraft] = []
        let id = state.originalTransactionId
        let period = state.billingPeriodKey
        func draft(_ type: EventType, _ key: String, _ change: EventChange = EventChange(), for recipient: AccountID = account) {
            var change = change
            change.store = state.store.text
            drafts.append(
                EventDraft(
                    type: type, key: "\(key):\(recipient.text)", account: recipient, subscription: id, environment: state.environment,
                    change: change, cause: cause))
        }
        var before = stored?.accountId == nil ? nil : stored
        if let previous = before, let from = previous.accountId, from != account {
            let change = EventChange(fromAccountId: from.text, toAccountId: account.text)
            draft(.subscriptionTransferred, "transferred:\(id):\(period):\(from.text)", change)
            draft(.subscriptionTransferred, "transferred:\(id):\(period):\(account.text)", change, for: from)
            before = previous
        }
        // Win-back offers appearing for a lapsed subscriber: once per period in force.
        if before?.winBackOfferIds.isEmpty ?? true, !state.winBackOfferIds.isEmpty {
            draft(
                .subscriptionWinBackEligible, "win_back:\(id):\(period)",
                EventChange(productId: state.productId, offerIds: state.winBackOfferIds))
        }
        guard let before else {
            if state.status.isRunning {
                draft(.subscriptionStarted, "started:\(id):\(period)", EventChange(expiresAt: state.expiresAt, productId: state.productId))
            } else {
                appendEnd(state, draft: draft)
            }
            return drafts
        }

        if before.billingPeriodKey != period {
            if before.productId != state.productId {
                draft(
                    .subscriptionPlanChanged, "plan_changed:\(id):\(period)",
                    EventChange(
                        fromProductId: before.productId, toProductId: state.productId,
                        direction: direction(from: before.productId, to: state.productId, catalogue: catalogue), effective: "now",
                        expiresAt: state.expiresAt))
            } else if state.status.isRunning {
                switch before.status {
                case .expired, .refunded, .revoked:
                    draft(.subscriptionStarted, "started:\(id):\(period)", EventChange(expiresAt: state.expiresAt, productId: state.productId))
                case .billingRetry, .gracePeriod:
                    draft(.subscriptionRecovered, "recovered:\(id):\(period)", EventChange(expiresAt: state.expiresAt, productId: state.productId))
                case .active:
                    draft(.subscriptionRenewed, "renewed:\(id):\(period)", EventChange(expiresAt: state.expiresAt, productId: state.productId))
                }
            }
        } else if before.status != state.status {
            switch (before.status, state.status) {
            case (.billingRetry, .active), (.gracePeriod, .active):
                draft(.subscriptionRecovered, "recovered:\(id):\(period)", EventChange(expiresAt: state.expiresAt, productId: state.productId))
            case (.refunded, _):
                draft(.subscriptionRefundReversed, "refund_reversed:\(id):\(period)", EventChange(transactionId: state.latestTransactionId))
            default:
                break
            }
        } else if let previous = before.expiresAt, let now = state.expiresAt, now > previous, state.status.isRunning {
            draft(
                .subscriptionExtended, "extended:\(id):\(period):\(Int64(now.timeIntervalSince1970 * 1000))",
                EventChange(previousExpiresAt: previous, expiresAt: now))
        }

        if before.status != state.status || before.billingPeriodKey != period {
            switch state.status {
            case .billingRetry:
                draft(.subscriptionBillingIssue, "billing_issue:\(id):\(period)", EventChange(expiresAt: state.expiresAt))
            case .gracePeriod:
                draft(.subscriptionBillingIssue, "billing_issue:\(id):\(period)", EventChange(expiresAt: state.expiresAt))
                draft(.subscriptionGracePeriodStarted, "grace_period:\(id):\(period)", EventChange(expiresAt: state.gracePeriodExpiresAt))
            case .expired, .refunded, .revoked:
                appendEnd(state, draft: draft)
            case .active:
                break
            }
        }

        if state.pendingProductId != before.pendingProductId, let pending = state.pendingProductId, state.status.isRunning {
            draft(
                .subscriptionPlanChanged, "plan_scheduled:\(id):\(period):\(pending)",
                EventChange(
                    fromProductId: state.productId, toProductId: pending,
                    direction: direction(from: state.productId, to: pending, catalogue: catalogue), effective: "next_renewal"))
        }
        if before.status.isRunning, state.status.isRunning, renews(before) != renews(state) {
            let fact = "\(state.lastEvent.signedDate):\(state.lastEvent.eventId)"
            if renews(state) {
                draft(.subscriptionRenewalEnabled, "renewal_enabled:\(id):\(fact)")
            } else {
                draft(
                    .subscriptionRenewalDisabled, "renewal_disabled:\(id):\(fact)",
                    EventChange(expiresAt: state.commitment?.endsAt ?? state.expiresAt))
            }
        }
        return drafts
    }

    /// Whether the subscription goes on past what is paid: its renewal, or for a monthly-billed commitment (whose
    /// months bill until its end whatever the customer chose) the commitment's.
    static func renews(_ state: SubscriptionState) -> Bool {
        state.commitment.map { $0.renewsTo != nil } ?? state.willRenew
    }

    /// The event of an ended subscription: expired (with the reason), refunded or revoked.
    private static func appendEnd(_ state: SubscriptionState, draft: (EventType, String, EventChange, AccountID) -> Void) {
        let id = state.originalTransactionId
        let period = state.billingPeriodKey
        guard let account = state.accountId else { return }
        switch state.status {
        case .refunded:
            draft(
                .subscriptionRefunded, "refunded:\(id):\(period)",
                EventChange(reason: state.endReason?.text, transactionId: state.latestTransactionId), account)
        case .revoked:
            draft(
                .subscriptionRevoked, "revoked:\(id):\(period)", EventChange(reason: state.endReason?.text, transactionId: state.latestTransactionId),
                account)
        case .expired:
            draft(.subscriptionExpired, "expired:\(id):\(period)", EventChange(reason: state.endReason?.text, expiresAt: state.expiresAt), account)
        case .active, .gracePeriod, .billingRetry:
            break
        }
    }

    /// `upgrade` to a lower level number (Apple's level 1 is the highest), `downgrade` to a higher one, `crossgrade`
    /// within a level; `nil` when a product is not in the catalogue.
    static func direction(from: String, to: String, catalogue: TierCatalogue) -> String? {
        guard let old = catalogue.tier(ofProduct: from)?.tier.level, let new = catalogue.tier(ofProduct: to)?.tier.level else { return nil }
        return new < old ? "upgrade" : new > old ? "downgrade" : "crossgrade"
    }
}
