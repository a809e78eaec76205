import Foundation

/// The stored facts of a source that is not a store's subscription: an operator's grant, or a one-time purchase
/// (a store's non-consumable or non-renewing subscription). Subscriptions keep their own facts in their store's module.
public struct EntitlementRecord: Sendable, Equatable {
    public enum Kind: Hashable, Sendable {
        case grant
        case purchase
        case unknown(String)

        public init(_ text: String) {
            switch text {
            case "grant": self = .grant
            case "purchase": self = .purchase
            default: self = .unknown(text)
            }
        }

        public var text: String {
            switch self {
            case .grant: return "grant"
            case .purchase: return "purchase"
            case .unknown(let text): return text
            }
        }
    }

    /// A grant's id, or the purchase's transaction id.
    public var id: String
    public var kind: Kind
    public var store: Store
    /// The product bought (purchases).
    public var productId: String?
    /// The tier granted (grants).
    public var tier: String?
    /// When the purchase was made, or the grant starts.
    public var startsAt: Date
    /// A grant's end as asked (`nil`: for good); purchases leave it `nil`, their product's duration decides.
    public var endsAt: Date?
    /// When it ended before its time: an operator ended the grant, a refund or revocation took the purchase back.
    public var endedAt: Date?
    public var endReason: SourceEndReason?
    public var environment: StoreEnvironment?
    /// Bought, or had through Family Sharing (a store's purchase).
    public var ownership: Ownership?
    /// The operator's reason for a grant.
    public var reason: String?
    /// The operator who made the grant.
    public var createdBy: String?
    /// The store's signing time of the version held (purchases): a newer version replaces it, an older never does.
    public var signedDate: Int64?

    public init(
        id: String, kind: Kind, store: Store, productId: String? = nil, tier: String? = nil, startsAt: Date, endsAt: Date? = nil,
        endedAt: Date? = nil, endReason: SourceEndReason? = nil, environment: StoreEnvironment? = nil, ownership: Ownership? = nil,
        reason: String? = nil,
        createdBy: String? = nil, signedDate: Int64? = nil
    ) {
        self.id = id
        self.kind = kind
        self.store = store
        self.productId = productId
        self.tier = tier
        self.startsAt = startsAt
        self.endsAt = endsAt
        self.endedAt = endedAt
        self.endReason = endReason
        self.environment = environment
        self.ownership = ownership
        self.reason = reason
        self.createdBy = createdBy
        self.signedDate = signedDate
    }

    /// Of two versions of one purchase, the one to keep: the newer signing, and on a tie the one that says it was
    /// taken back — so any delivery order with duplicates keeps the same version (a refund's reversal is signed
    /// later than the refund).
    public static func newest(_ lhs: EntitlementRecord, _ rhs: EntitlementRecord) -> EntitlementRecord {
        let lhsKey = (lhs.signedDate ?? 0, lhs.endedAt == nil ? 0 : 1)
        let rhsKey = (rhs.signedDate ?? 0, rhs.endedAt == nil ? 0 : 1)
        return rhsKey > lhsKey ? rhs : lhs
    }
}
