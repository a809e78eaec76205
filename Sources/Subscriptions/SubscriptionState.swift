import Foundation

/// Everything Storekeeper knows about one auto-renewable subscription (one `originalTransactionId`), as of the
/// newest snapshot applied.
public struct SubscriptionState: Codable, Sendable, Equatable {
    public var originalTransactionId: String
    public var accountId: UUID?
    public var productId: String
    public var environment: String
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
    /// `PURCHASED` or `FAMILY_SHARED`.
    public var ownership: String
    public var latestTransactionId: String
    public var lastEventType: String
    /// `signedDate` (ms) of the newest snapshot applied; older snapshots never change the state.
    public var lastSignedDate: Int64
    /// Why the subscription ended (`EXPIRED_VOLUNTARY`, `REFUND`, `REVOKE`, …); `nil` while it runs.
    public var endReason: String?

    public init(
        originalTransactionId: String, accountId: UUID?, productId: String, environment: String,
        status: SubscriptionStatus, willRenew: Bool, autoRenewProductId: String?, pendingProductId: String?,
        purchaseDate: Date?, expiresAt: Date?, gracePeriodExpiresAt: Date?, isTrial: Bool, ownership: String,
        latestTransactionId: String, lastEventType: String, lastSignedDate: Int64, endReason: String?
    ) {
        self.originalTransactionId = originalTransactionId
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
        self.lastSignedDate = lastSignedDate
        self.endReason = endReason
    }

    /// The status at `now`: the stored status, except that time ends access even when Apple's notification about
    /// it never arrives — an active subscription past `expiresAt`, or a grace period past its end, is `expired`.
    public func effectiveStatus(at now: Date) -> SubscriptionStatus {
        switch status {
        case .active:
            if let expiresAt, expiresAt <= now { return .expired }
            return .active
        case .gracePeriod:
            if let end = gracePeriodExpiresAt ?? expiresAt, end <= now { return .expired }
            return .gracePeriod
        case .billingRetry:
            // Apple retries for up to 60 days, then sends EXPIRED/BILLING_RETRY; past that window, treat it as over.
            if let expiresAt, expiresAt.addingTimeInterval(Self.billingRetryWindow) <= now { return .expired }
            return .billingRetry
        case .expired, .refunded, .revoked:
            return status
        }
    }

    /// Whether the subscription grants access at `now`.
    public func isEntitled(at now: Date) -> Bool {
        switch effectiveStatus(at: now) {
        case .active, .gracePeriod: return true
        case .billingRetry, .expired, .refunded, .revoked: return false
        }
    }

    /// When the effective status will next change by the clock alone, if it will.
    public func nextChange(after now: Date) -> Date? {
        let candidate: Date?
        switch status {
        case .active: candidate = expiresAt
        case .gracePeriod: candidate = gracePeriodExpiresAt ?? expiresAt
        case .billingRetry: candidate = expiresAt?.addingTimeInterval(Self.billingRetryWindow)
        case .expired, .refunded, .revoked: candidate = nil
        }
        guard let candidate, candidate > now else { return nil }
        return candidate
    }

    /// Apple's billing-retry window.
    public static let billingRetryWindow: TimeInterval = 60 * 86_400
}
