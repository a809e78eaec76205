import Entitlements

/// App Store Server Notifications V2 `notificationType`, with ``unknown(_:)`` for types Apple adds later.
public enum NotificationType: Hashable, Sendable {
    case subscribed, didRenew, didFailToRenew, didChangeRenewalPreference, didChangeRenewalStatus, offerRedeemed
    case expired, gracePeriodExpired, priceIncrease, refund, refundDeclined, refundReversed, consumptionRequest
    case renewalExtended, renewalExtension, revoke, oneTimeCharge, test, externalPurchaseToken, metadataUpdate
    case migration, priceChange, rescindConsent
    /// A client-posted transaction (a claim), not an Apple notification.
    case clientTransaction
    /// A snapshot the App Store Server API returned.
    case serverStatus
    case unknown(String)

    private static let names: [String: NotificationType] = [
        "SUBSCRIBED": .subscribed, "DID_RENEW": .didRenew, "DID_FAIL_TO_RENEW": .didFailToRenew,
        "DID_CHANGE_RENEWAL_PREF": .didChangeRenewalPreference, "DID_CHANGE_RENEWAL_STATUS": .didChangeRenewalStatus,
        "OFFER_REDEEMED": .offerRedeemed, "EXPIRED": .expired, "GRACE_PERIOD_EXPIRED": .gracePeriodExpired,
        "PRICE_INCREASE": .priceIncrease, "REFUND": .refund, "REFUND_DECLINED": .refundDeclined,
        "REFUND_REVERSED": .refundReversed, "CONSUMPTION_REQUEST": .consumptionRequest,
        "RENEWAL_EXTENDED": .renewalExtended, "RENEWAL_EXTENSION": .renewalExtension, "REVOKE": .revoke,
        "ONE_TIME_CHARGE": .oneTimeCharge, "TEST": .test, "EXTERNAL_PURCHASE_TOKEN": .externalPurchaseToken,
        "METADATA_UPDATE": .metadataUpdate, "MIGRATION": .migration, "PRICE_CHANGE": .priceChange,
        "RESCIND_CONSENT": .rescindConsent,
        SubscriptionEvent.clientTransactionType: .clientTransaction, SubscriptionEvent.serverStatusType: .serverStatus,
    ]

    public init(_ name: String) { self = Self.names[name] ?? .unknown(name) }

    /// Apple's name of the type (`DID_RENEW`), or Storekeeper's for the events that are not notifications.
    public var name: String {
        if case .unknown(let name) = self { return name }
        return Self.namesByType[self] ?? "UNKNOWN"
    }

    private static let namesByType = Dictionary(names.map { ($0.value, $0.key) }, uniquingKeysWith: { first, _ in first })
}

extension NotificationType: TextCoded {
    public var text: String { name }
}

/// `subtype` of a notification, with ``unknown(_:)`` for subtypes Apple adds later.
public enum NotificationSubtype: Hashable, Sendable {
    case initialBuy, resubscribe, downgrade, upgrade, autoRenewEnabled, autoRenewDisabled, voluntary, billingRetry
    case priceIncrease, gracePeriod, productNotForSale, billingRecovery, pending, accepted, summary, failure
    /// No subtype.
    case absent
    /// `EXTERNAL_PURCHASE_TOKEN` subtypes: a token not reported in time, a token created, one still active that must be
    /// reported.
    case unreported, created, activeTokenReminder
    case unknown(String)

    private static let names: [String: NotificationSubtype] = [
        "INITIAL_BUY": .initialBuy, "RESUBSCRIBE": .resubscribe, "DOWNGRADE": .downgrade, "UPGRADE": .upgrade,
        "AUTO_RENEW_ENABLED": .autoRenewEnabled, "AUTO_RENEW_DISABLED": .autoRenewDisabled, "VOLUNTARY": .voluntary,
        "BILLING_RETRY": .billingRetry, "PRICE_INCREASE": .priceIncrease, "GRACE_PERIOD": .gracePeriod,
        "PRODUCT_NOT_FOR_SALE": .productNotForSale, "BILLING_RECOVERY": .billingRecovery, "PENDING": .pending,
        "ACCEPTED": .accepted, "SUMMARY": .summary, "FAILURE": .failure,
        "UNREPORTED": .unreported, "CREATED": .created, "ACTIVE_TOKEN_REMINDER": .activeTokenReminder,
    ]

    /// `nil` (no subtype) is ``absent``.
    public init(_ name: String?) {
        guard let name else {
            self = .absent
            return
        }
        self = Self.names[name] ?? .unknown(name)
    }
}

/// Why a subscription ended, as archived and reported (`end_reason`): the store-neutral end reason every source
/// uses (`EXPIRED_<subtype>`, `REFUND`, `REVOKE`).
public typealias EndReason = SourceEndReason
