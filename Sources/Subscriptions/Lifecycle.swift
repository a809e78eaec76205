import AppStoreModels
import Foundation

/// The subscription lifecycle rules: a pure function from (current state, verified event, now) to the new state.
///
/// Each event carries a complete snapshot of the subscription as of its `signedDate`, so the newest snapshot
/// decides the state and older ones never roll it back. That makes the outcome independent of delivery order and
/// of duplicates.
public enum Lifecycle {
    /// What applying one event decided.
    public struct Decision: Sendable, Equatable {
        public var state: SubscriptionState
        /// `false` when the event's snapshot was older than the state's (recorded, not applied).
        public var applied: Bool
    }

    /// Applies `event` to `current` (nil for a subscription never seen before).
    public static func apply(_ event: SubscriptionEvent, to current: SubscriptionState?, now: Date) -> Decision {
        if var current, event.signedDate <= current.lastSignedDate {
            // A stale snapshot: its only lasting fact is which account made the purchase, if we did not know.
            if current.accountId == nil, let account = accountId(of: event) { current.accountId = account }
            return Decision(state: current, applied: false)
        }
        return Decision(state: snapshot(event, previous: current), applied: true)
    }

    /// The state the event's snapshot describes.
    static func snapshot(_ event: SubscriptionEvent, previous: SubscriptionState?) -> SubscriptionState {
        let transaction = event.transaction
        let renewal = event.renewalInfo
        let (status, endReason) = statusAndEndReason(of: event)
        let autoRenewProductId = renewal?.autoRenewProductId ?? previous?.autoRenewProductId
        let willRenew: Bool
        if let autoRenewStatus = renewal?.autoRenewStatus {
            willRenew = autoRenewStatus == 1
        } else {
            willRenew = previous?.willRenew ?? true
        }
        return SubscriptionState(
            originalTransactionId: transaction.originalTransactionId,
            accountId: accountId(of: event) ?? previous?.accountId,
            productId: transaction.productId,
            environment: event.environment,
            status: status,
            willRenew: willRenew && status.isRunning,
            autoRenewProductId: autoRenewProductId,
            pendingProductId: autoRenewProductId.flatMap { $0 == transaction.productId ? nil : $0 },
            purchaseDate: transaction.purchaseDate.map(date(milliseconds:)),
            expiresAt: transaction.expiresDate.map(date(milliseconds:)),
            gracePeriodExpiresAt: status == .gracePeriod ? renewal?.gracePeriodExpiresDate.map(date(milliseconds:)) : nil,
            isTrial: transaction.offerDiscountType == "FREE_TRIAL",
            ownership: transaction.inAppOwnershipType ?? previous?.ownership ?? "PURCHASED",
            latestTransactionId: transaction.transactionId,
            lastEventType: event.notificationType,
            lastSignedDate: event.signedDate,
            endReason: endReason
        )
    }

    /// Status and end reason from the notification type, refined by the revocation fields and Apple's `data.status`.
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
            return (status, status == .expired ? expiredReason(intent: event.renewalInfo?.expirationIntent) : nil)
        }
        if event.renewalInfo?.isInBillingRetryPeriod == true {
            return (event.renewalInfo?.gracePeriodExpiresDate == nil ? .billingRetry : .gracePeriod, nil)
        }
        return (.active, nil)
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

    static func date(milliseconds: Int64) -> Date { Date(timeIntervalSince1970: Double(milliseconds) / 1000) }
}

extension SubscriptionStatus {
    /// Whether the subscription can still renew (not ended).
    var isRunning: Bool {
        switch self {
        case .active, .gracePeriod, .billingRetry: return true
        case .expired, .refunded, .revoked: return false
        }
    }
}
