import AppStoreModels
import Entitlements
import Foundation

/// Where one auto-renewable subscription stands: derived from its store's facts (``Lifecycle/derive(_:)`` for the
/// App Store's), so a function of the set of facts seen, never of the clock or of delivery order.
///
/// A subscription is named by its store and that store's id for it: ``originalTransactionId`` holds the App Store's
/// `originalTransactionId`, Stripe's `sub_…`, or the first purchase token of a Play chain.
public struct SubscriptionState: Codable, Sendable, Equatable {
    /// The store's id of the subscription (see the type's note).
    public var originalTransactionId: String
    /// Which store sells the subscription: stored, never guessed from the id's shape.
    public var store: Store
    public var accountId: AccountID?
    public var productId: String
    public var environment: AppStoreEnvironment
    public var status: SubscriptionStatus
    public var willRenew: Bool
    public var autoRenewProductId: String?
    /// A product change that takes effect at the next renewal (a queued downgrade or crossgrade).
    public var pendingProductId: String?
    /// Start of the current period.
    public var purchaseDate: Date?
    public var expiresAt: Date?
    public var gracePeriodExpiresAt: Date?
    public var isTrial: Bool
    public var ownership: Ownership
    public var latestTransactionId: String
    /// The type of the newest event held (a notification's, or a claim's or Server API snapshot's own).
    public var lastEventType: NotificationType
    /// Position of the newest event held.
    public var lastEvent: EventPosition
    /// Why the subscription ended (`EXPIRED_VOLUNTARY`, `REFUND`, `REVOKE`, …); `nil` while it runs.
    public var endReason: EndReason?
    /// When a refund or revocation ended access.
    public var revokedAt: Date?
    /// The offer applied to the current period, if any.
    public var offer: Offer?
    /// The customer's answer to a pending price increase, while one is in progress.
    public var priceIncrease: PriceIncreaseConsent?
    /// What the current period cost, in milliunits, when the transaction says.
    public var price: Int64?
    /// The current billing period's identity (`webOrderLineItemId`, else its `transactionId`): credit buckets are
    /// keyed by it.
    public var billingPeriodKey: String
    /// Access Apple reports beyond `expiresAt` — a renewal Storekeeper has not seen yet — until a recheck finds it.
    public var accessUntil: Date?
    /// How the price is billed: up front per period, or monthly under a 12-month commitment.
    public var billingPlan: BillingPlan
    /// A monthly-billed 12-month commitment's progress and what follows it.
    public var commitment: Commitment?
    /// Apple's win-back offers the customer may redeem in the App Store (renewal info `eligibleWinBackOfferIds`, best
    /// first); none while the subscription is in a grace period or billing retry.
    public var winBackOfferIds: [String]
    /// Apple's `appTransactionId`: the customer's Apple Account in this app (one per account and family member).
    public var appTransactionId: String?

    /// An offer redeemed for the current period.
    public struct Offer: Codable, Sendable, Equatable {
        public var type: OfferType
        public var identifier: String?
        public var discountType: OfferDiscountType?
        public var period: String?

        public init(type: OfferType, identifier: String?, discountType: OfferDiscountType?, period: String?) {
            self.type = type
            self.identifier = identifier
            self.discountType = discountType
            self.period = period
        }

        public var isWinBack: Bool { type == .winBack }
    }

    /// `priceIncreaseStatus` of the renewal info.
    public enum PriceIncreaseConsent: String, Codable, Sendable {
        case pending
        case accepted
    }

    public init(
        originalTransactionId: String, accountId: AccountID?, productId: String, environment: AppStoreEnvironment,
        status: SubscriptionStatus, willRenew: Bool, autoRenewProductId: String?, pendingProductId: String?,
        purchaseDate: Date?, expiresAt: Date?, gracePeriodExpiresAt: Date?, isTrial: Bool, ownership: Ownership,
        latestTransactionId: String, lastEventType: NotificationType, lastEvent: EventPosition, endReason: EndReason?,
        revokedAt: Date? = nil, offer: Offer? = nil, priceIncrease: PriceIncreaseConsent? = nil, price: Int64? = nil,
        billingPeriodKey: String? = nil, accessUntil: Date? = nil, store: Store = .appStore, billingPlan: BillingPlan = .billedUpfront,
        commitment: Commitment? = nil, winBackOfferIds: [String] = [], appTransactionId: String? = nil
    ) {
        self.billingPlan = billingPlan
        self.commitment = commitment
        self.winBackOfferIds = winBackOfferIds
        self.appTransactionId = appTransactionId
        self.originalTransactionId = originalTransactionId
        self.store = store
        self.accountId = accountId
        self.productId = productId
        self.environment = environment
        self.status = status
        self.willRenew = willRenew
        self.autoRenewProductId = autoRenewProductId
        self.pendingProductId = pendingProductId
        self.purchaseDate = purchaseDate
        self.expiresAt = expiresAt
        self.gracePeriodExpiresAt = gracePeriodExpiresAt
        self.isTrial = isTrial
        self.ownership = ownership
        self.latestTransactionId = latestTransactionId
        self.lastEventType = lastEventType
        self.lastEvent = lastEvent
        self.endReason = endReason
        self.revokedAt = revokedAt
        self.offer = offer
        self.priceIncrease = priceIncrease
        self.price = price
        self.billingPeriodKey = billingPeriodKey ?? latestTransactionId
        self.accessUntil = accessUntil
    }

    /// The status at `now`: the stored status, except that time ends access even when Apple's notification about
    /// it never arrives — an active subscription past `expiresAt`, a grace period past its end, or a billing retry
    /// past the store's retry window (``retryWindow``) is `expired`.
    ///
    /// A grace period that runs out without news is billing retry — both stores keep trying to charge after it —
    /// until the retry window ends too.
    public func effectiveStatus(at now: Date) -> SubscriptionStatus {
        guard let end = clockEnd, end <= now else { return status }
        if status == .gracePeriod, let retryEnd = billingRetryEnd, now < retryEnd { return .billingRetry }
        return .expired
    }

    /// When billing retry gives up by the clock: the plan's retry window after the period's end.
    var billingRetryEnd: Date? { expiresAt?.addingTimeInterval(retryWindow) }

    /// Whether the subscription grants access at `now`.
    public func isEntitled(at now: Date) -> Bool {
        switch effectiveStatus(at: now) {
        case .active, .gracePeriod: return true
        case .billingRetry, .expired, .refunded, .revoked: return false
        }
    }

    /// When the effective status will next change by the clock alone, if it will.
    public func nextChange(after now: Date) -> Date? {
        guard let end = clockEnd else { return nil }
        if end > now { return end }
        if status == .gracePeriod, let retryEnd = billingRetryEnd, retryEnd > now { return retryEnd }
        return nil
    }

    /// The instant the clock ends the stored status, for the statuses that still run.
    public var clockEnd: Date? {
        switch status {
        case .active: return [expiresAt, accessUntil].compactMap { $0 }.max()
        case .gracePeriod: return gracePeriodExpiresAt ?? expiresAt?.addingTimeInterval(Self.shortestGracePeriod)
        case .billingRetry: return billingRetryEnd
        case .expired, .refunded, .revoked: return nil
        }
    }

    /// Apple's billing-retry window.
    public static let billingRetryWindow: TimeInterval = 60 * 86_400
    /// Apple's shortest grace period, assumed when a grace-period notification carries no end date.
    public static let shortestGracePeriod: TimeInterval = 3 * 86_400
}
