import Foundation

/// What `purchases.subscriptionsv2.get` answers for a purchase token (androidpublisher v3, `SubscriptionPurchaseV2`):
/// the token's whole state now. Only the fields Storekeeper derives from are read; the stored read keeps the rest.
public struct SubscriptionPurchaseV2: Decodable, Sendable, Equatable {
    public var subscriptionState: SubscriptionState
    /// When the subscription was granted (unset while the purchase is pending).
    public var startTime: Date?
    public var lineItems: [LineItem]
    /// The token this one replaces (an upgrade, a downgrade, a re-signup, a prepaid top-up).
    public var linkedPurchaseToken: String?
    public var acknowledgementState: String?
    public var externalAccountIdentifiers: ExternalAccountIdentifiers?
    /// A subscription bought again in the Play Store after an earlier one expired (2025-11-19): the expired purchase
    /// and the account identifiers it carried. Such a purchase names no account of its own — the app's purchase flow,
    /// which sets them, never ran — so this is how it is known to be the same customer's.
    public var outOfAppPurchaseContext: OutOfAppPurchaseContext?
    /// Present (as `{}`) for a license tester's purchase.
    public var isTest: Bool
    public var pausedAutoResumeTime: Date?
    /// Which of `canceledStateContext`'s kinds is present (`userInitiatedCancellation`, …), if any.
    public var cancellation: String?
    public var regionCode: String?

    /// `SUBSCRIPTION_STATE_…`, with `unknown` for values Google adds.
    public enum SubscriptionState: Sendable, Hashable {
        case pending, active, paused, inGracePeriod, onHold, canceled, expired, pendingPurchaseCanceled
        case unknown(String)

        public init(_ text: String) {
            switch text {
            case "SUBSCRIPTION_STATE_PENDING": self = .pending
            case "SUBSCRIPTION_STATE_ACTIVE": self = .active
            case "SUBSCRIPTION_STATE_PAUSED": self = .paused
            case "SUBSCRIPTION_STATE_IN_GRACE_PERIOD": self = .inGracePeriod
            case "SUBSCRIPTION_STATE_ON_HOLD": self = .onHold
            case "SUBSCRIPTION_STATE_CANCELED": self = .canceled
            case "SUBSCRIPTION_STATE_EXPIRED": self = .expired
            case "SUBSCRIPTION_STATE_PENDING_PURCHASE_CANCELED": self = .pendingPurchaseCanceled
            default: self = .unknown(text)
            }
        }

        public var text: String {
            switch self {
            case .pending: return "SUBSCRIPTION_STATE_PENDING"
            case .active: return "SUBSCRIPTION_STATE_ACTIVE"
            case .paused: return "SUBSCRIPTION_STATE_PAUSED"
            case .inGracePeriod: return "SUBSCRIPTION_STATE_IN_GRACE_PERIOD"
            case .onHold: return "SUBSCRIPTION_STATE_ON_HOLD"
            case .canceled: return "SUBSCRIPTION_STATE_CANCELED"
            case .expired: return "SUBSCRIPTION_STATE_EXPIRED"
            case .pendingPurchaseCanceled: return "SUBSCRIPTION_STATE_PENDING_PURCHASE_CANCELED"
            case .unknown(let text): return text
            }
        }
    }

    public struct LineItem: Decodable, Sendable, Equatable {
        public var productId: String
        public var expiryTime: Date?
        /// The order of the newest paid period (`GPA.…`); a renewal adds `..N`.
        public var latestSuccessfulOrderId: String?
        public var basePlanId: String?
        public var offerId: String?
        public var autoRenewEnabled: Bool?
        public var recurringPrice: Money?
        public var isPrepaid: Bool
        /// `offerPhase`'s kind (`freeTrial`, `introductoryPrice`, `basePrice`, `prorationPeriod`), when Google says.
        public var offerPhase: String?

        enum CodingKeys: String, CodingKey {
            case productId, expiryTime, latestSuccessfulOrderId, offerDetails, autoRenewingPlan, prepaidPlan, offerPhase
        }

        struct OfferDetails: Decodable {
            var basePlanId: String?
            var offerId: String?
        }
        struct AutoRenewingPlan: Decodable {
            var autoRenewEnabled: Bool?
            var recurringPrice: Money?
        }

        public init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            productId = try container.decode(String.self, forKey: .productId)
            expiryTime = try container.decodeIfPresent(String.self, forKey: .expiryTime).flatMap(PubSubPush.date)
            latestSuccessfulOrderId = try container.decodeIfPresent(String.self, forKey: .latestSuccessfulOrderId)
            let offer = try container.decodeIfPresent(OfferDetails.self, forKey: .offerDetails)
            basePlanId = offer?.basePlanId
            offerId = offer?.offerId
            let plan = try container.decodeIfPresent(AutoRenewingPlan.self, forKey: .autoRenewingPlan)
            autoRenewEnabled = plan?.autoRenewEnabled
            recurringPrice = plan?.recurringPrice
            isPrepaid = container.contains(.prepaidPlan)
            offerPhase = try container.decodeIfPresent([String: JSONIgnored].self, forKey: .offerPhase)?.keys.sorted().first
        }
    }

    /// Google's `Money`: whole `units` and `nanos` (billionths) of `currencyCode`.
    public struct Money: Decodable, Sendable, Equatable {
        public var currencyCode: String?
        public var units: String?
        public var nanos: Int?

        /// The amount in milliunits, as Storekeeper counts money (`units` is an int64 written as a string).
        public var milliunits: Int64? {
            guard let units = Int64(units ?? "0"), abs(units) < 9_000_000_000_000 else { return nil }
            return units * 1000 + Int64((nanos ?? 0) / 1_000_000)
        }
    }

    public struct ExternalAccountIdentifiers: Decodable, Sendable, Equatable {
        public var obfuscatedExternalAccountId: String?
        public var obfuscatedExternalProfileId: String?
    }

    public struct OutOfAppPurchaseContext: Decodable, Sendable, Equatable {
        public var expiredExternalAccountIdentifiers: ExternalAccountIdentifiers?
        public var expiredPurchaseToken: String?
    }

    enum CodingKeys: String, CodingKey {
        case subscriptionState, startTime, lineItems, linkedPurchaseToken, acknowledgementState, externalAccountIdentifiers
        case outOfAppPurchaseContext, testPurchase, pausedStateContext, canceledStateContext, regionCode
    }

    struct PausedStateContext: Decodable { var autoResumeTime: String? }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        subscriptionState = SubscriptionState(
            try container.decodeIfPresent(String.self, forKey: .subscriptionState) ?? "SUBSCRIPTION_STATE_UNSPECIFIED")
        startTime = try container.decodeIfPresent(String.self, forKey: .startTime).flatMap(PubSubPush.date)
        lineItems = try container.decodeIfPresent([LineItem].self, forKey: .lineItems) ?? []
        linkedPurchaseToken = try container.decodeIfPresent(String.self, forKey: .linkedPurchaseToken)
        acknowledgementState = try container.decodeIfPresent(String.self, forKey: .acknowledgementState)
        externalAccountIdentifiers = try container.decodeIfPresent(ExternalAccountIdentifiers.self, forKey: .externalAccountIdentifiers)
        outOfAppPurchaseContext = try container.decodeIfPresent(OutOfAppPurchaseContext.self, forKey: .outOfAppPurchaseContext)
        isTest = container.contains(.testPurchase)
        pausedAutoResumeTime = try container.decodeIfPresent(PausedStateContext.self, forKey: .pausedStateContext)?.autoResumeTime.flatMap(
            PubSubPush.date)
        cancellation = try container.decodeIfPresent([String: JSONIgnored].self, forKey: .canceledStateContext)?.keys.sorted().first
        regionCode = try container.decodeIfPresent(String.self, forKey: .regionCode)
    }

    /// The line item that decides access: of the items owned (paid: they carry an order id — an item a deferred
    /// replacement will move to does not yet), the one that runs longest; a subscription without add-ons has one.
    public var mainLineItem: LineItem? {
        let owned = lineItems.filter { $0.latestSuccessfulOrderId != nil }
        return (owned.isEmpty ? lineItems : owned).max { ($0.expiryTime ?? .distantPast) < ($1.expiryTime ?? .distantPast) }
    }
}

/// Any JSON value, skipped: for objects whose keys alone say something (`offerPhase`, `canceledStateContext`).
struct JSONIgnored: Decodable {
    init(from decoder: any Decoder) throws {}
}
