import AppStoreModels
import Foundation

extension Lifecycle {
    /// The state an event's snapshot describes. What the snapshot leaves out (renewal info in a claim, say) is kept
    /// from `previous`.
    static func snapshot(_ event: SubscriptionEvent, previous: SubscriptionState?) -> SubscriptionState {
        let transaction = event.transaction
        let renewal = event.renewalInfo
        let (status, endReason) = statusAndEndReason(of: event)
        let autoRenewProductId = renewal?.autoRenewProductId ?? impliedAutoRenewProduct(event, previous: previous)
        return SubscriptionState(
            originalTransactionId: transaction.originalTransactionId,
            accountId: previous?.accountId ?? event.claimant ?? accountId(of: event),
            productId: transaction.productId,
            environment: event.environment,
            status: status,
            willRenew: willRenew(event, previous: previous) && status.isRunning,
            autoRenewProductId: autoRenewProductId,
            pendingProductId: autoRenewProductId.flatMap { $0 == transaction.productId ? nil : $0 },
            purchaseDate: transaction.purchaseDate.map(date(milliseconds:)),
            expiresAt: transaction.expiresDate.map(date(milliseconds:)),
            gracePeriodExpiresAt: status == .gracePeriod ? renewal?.gracePeriodExpiresDate.map(date(milliseconds:)) : nil,
            isTrial: transaction.offerDiscountType == "FREE_TRIAL",
            ownership: transaction.inAppOwnershipType ?? previous?.ownership ?? "PURCHASED",
            latestTransactionId: transaction.transactionId,
            lastEventType: event.notificationType,
            lastEvent: event.position,
            endReason: endReason,
            revokedAt: status == .refunded || status == .revoked ? transaction.revocationDate.map(date(milliseconds:)) : nil,
            offer: transaction.offerType.map {
                SubscriptionState.Offer(
                    type: $0, identifier: transaction.offerIdentifier, discountType: transaction.offerDiscountType,
                    period: transaction.offerPeriod)
            },
            priceIncrease: priceIncrease(event, previous: previous),
            price: transaction.price
        )
    }

    /// Status and end reason from the revocation fields, the notification type and Apple's `data.status`.
    static func statusAndEndReason(of event: SubscriptionEvent) -> (SubscriptionStatus, String?) {
        let transaction = event.transaction
        if transaction.revocationDate != nil {
            if transaction.revocationType == "FAMILY_REVOKE" || event.notificationType == "REVOKE" {
                return (.revoked, "REVOKE")
            }
            return (.refunded, "REFUND")
        }
        switch event.notificationType {
        case "EXPIRED":
            return (.expired, "EXPIRED_\(event.subtype ?? "OTHER")")
        case "REVOKE":
            return (.revoked, "REVOKE")
        case "DID_FAIL_TO_RENEW":
            return (event.subtype == "GRACE_PERIOD" ? .gracePeriod : .billingRetry, nil)
        case "GRACE_PERIOD_EXPIRED":
            return (.billingRetry, nil)
        default:
            break
        }
        if let code = event.appleStatus, let status = SubscriptionStatus(appleStatusCode: code) {
            switch status {
            case .expired: return (status, expiredReason(intent: event.renewalInfo?.expirationIntent))
            case .revoked: return (status, "REVOKE")
            case .refunded: return (status, "REFUND")
            case .active, .gracePeriod, .billingRetry: return (status, nil)
            }
        }
        if event.renewalInfo?.isInBillingRetryPeriod == true {
            return (event.renewalInfo?.gracePeriodExpiresDate == nil ? .billingRetry : .gracePeriod, nil)
        }
        return (.active, nil)
    }

    /// Whether the subscription will renew: the renewal info's `autoRenewStatus`, else the subtype, else as before.
    static func willRenew(_ event: SubscriptionEvent, previous: SubscriptionState?) -> Bool {
        if let autoRenewStatus = event.renewalInfo?.autoRenewStatus { return autoRenewStatus == 1 }
        switch event.subtype {
        case "AUTO_RENEW_DISABLED": return false
        case "AUTO_RENEW_ENABLED": return true
        default: return previous?.willRenew ?? true
        }
    }

    /// The next renewal's product when the renewal info is missing: a change of plan (`DID_CHANGE_RENEWAL_PREF`
    /// without subtype) or a new period clears a pending change; otherwise it stays as it was.
    static func impliedAutoRenewProduct(_ event: SubscriptionEvent, previous: SubscriptionState?) -> String? {
        switch (event.notificationType, event.subtype) {
        case ("DID_CHANGE_RENEWAL_PREF", nil), ("DID_CHANGE_RENEWAL_PREF", "UPGRADE"), ("DID_RENEW", _), ("SUBSCRIBED", _):
            return event.transaction.productId
        default:
            return previous?.autoRenewProductId ?? event.transaction.productId
        }
    }

    /// Consent to a price increase: the renewal info's `priceIncreaseStatus` (absent when none is in progress),
    /// else the `PRICE_INCREASE` subtype, else as before.
    static func priceIncrease(_ event: SubscriptionEvent, previous: SubscriptionState?) -> SubscriptionState.PriceIncreaseConsent? {
        if let renewal = event.renewalInfo {
            switch renewal.priceIncreaseStatus {
            case 0?: return .pending
            case 1?: return .accepted
            default: return nil
            }
        }
        switch (event.notificationType, event.subtype) {
        case ("PRICE_INCREASE", "PENDING"): return .pending
        case ("PRICE_INCREASE", "ACCEPTED"): return .accepted
        default: return previous?.priceIncrease
        }
    }

    /// `EXPIRED_<reason>` from a renewal info's `expirationIntent`.
    static func expiredReason(intent: Int32?) -> String {
        switch intent {
        case 1: return "EXPIRED_VOLUNTARY"
        case 2: return "EXPIRED_BILLING_RETRY"
        case 3: return "EXPIRED_PRICE_INCREASE"
        case 4: return "EXPIRED_PRODUCT_NOT_FOR_SALE"
        default: return "EXPIRED_OTHER"
        }
    }

    /// The account from `appAccountToken` (transaction first, then renewal info), when it is a UUID.
    static func accountId(of event: SubscriptionEvent) -> UUID? {
        (event.transaction.appAccountToken ?? event.renewalInfo?.appAccountToken).flatMap(UUID.init(uuidString:))
    }
}
