import Foundation

/// One thing that may entitle an account — a store's subscription, a one-time purchase, an operator's grant — as it
/// stands at one instant: the typed state every store's derivation produces and the account-level rules read. Each
/// store's module makes these from its own facts; nothing here knows a store.
public struct EntitlementSource: Sendable, Equatable {
    /// The store's id of the source: a subscription's original transaction, a purchase's transaction, a grant's id.
    public var id: String
    public var kind: SourceKind
    public var store: Store
    public var productId: String?
    /// The catalogue tier it entitles; `nil` when its product is not in the catalogue.
    public var tier: String?
    /// The tier's level (1 is the highest).
    public var level: Int?
    /// The tier's group: two auto-renewing sources in one group overlap.
    public var group: String?
    /// The start of the period in force.
    public var startsAt: Date?
    /// When access ends by the clock alone; `nil`: never (a lifetime purchase or grant) or not known.
    public var expiresAt: Date?
    public var status: SourceStatus
    public var entitled: Bool
    public var willRenew: Bool
    /// Why it ended.
    public var endReason: SourceEndReason?
    /// Where the customer manages it (the App Store's subscriptions page), when a store offers one.
    public var managementURL: String?
    /// When the source's state next changes by the clock alone.
    public var nextChangeAt: Date?

    public init(
        id: String, kind: SourceKind, store: Store, productId: String?, tier: String?, level: Int?, group: String?, startsAt: Date?,
        expiresAt: Date?, status: SourceStatus, entitled: Bool, willRenew: Bool, endReason: SourceEndReason? = nil, managementURL: String? = nil,
        nextChangeAt: Date? = nil
    ) {
        self.id = id
        self.kind = kind
        self.store = store
        self.productId = productId
        self.tier = tier
        self.level = level
        self.group = group
        self.startsAt = startsAt
        self.expiresAt = expiresAt
        self.status = status
        self.entitled = entitled
        self.willRenew = willRenew
        self.endReason = endReason
        self.managementURL = managementURL
        self.nextChangeAt = nextChangeAt
    }

    /// Whether it renews by itself (a subscription that has not been told to stop).
    public var isAutoRenewing: Bool { kind == .subscription && willRenew }
}

/// What kind of source an entitlement is.
public enum SourceKind: Hashable, Sendable {
    /// An auto-renewable subscription.
    case subscription
    /// A non-consumable purchase: for good.
    case lifetime
    /// A non-renewing subscription: a fixed duration from its purchase.
    case nonRenewing
    /// An operator's grant.
    case grant
    case unknown(String)

    public init(_ text: String) {
        switch text {
        case "subscription": self = .subscription
        case "lifetime": self = .lifetime
        case "non_renewing": self = .nonRenewing
        case "grant": self = .grant
        default: self = .unknown(text)
        }
    }

    public var text: String {
        switch self {
        case .subscription: return "subscription"
        case .lifetime: return "lifetime"
        case .nonRenewing: return "non_renewing"
        case .grant: return "grant"
        case .unknown(let text): return text
        }
    }
}

/// Where a source stands at an instant.
public enum SourceStatus: Hashable, Sendable {
    case active
    case gracePeriod
    case billingRetry
    /// Not started yet (a grant that starts later).
    case scheduled
    /// Ran out.
    case expired
    case refunded
    case revoked
    /// Ended by an operator.
    case ended
    case unknown(String)

    public var text: String {
        switch self {
        case .active: return "active"
        case .gracePeriod: return "grace_period"
        case .billingRetry: return "billing_retry"
        case .scheduled: return "scheduled"
        case .expired: return "expired"
        case .refunded: return "refunded"
        case .revoked: return "revoked"
        case .ended: return "ended"
        case .unknown(let text): return text
        }
    }
}
