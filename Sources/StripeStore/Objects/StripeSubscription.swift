import Entitlements

/// What Storekeeper reads of a Stripe subscription (`GET /v1/subscriptions/{id}`, API version
/// ``StripeAPIVersion/pinned``): its status, renewal, trial and items — each item with its price and, since
/// `2025-03-31.basil`, its own billing period.
public struct StripeSubscription: Codable, Sendable, Equatable {
    public var id: String
    public var customer: String?
    public var status: Status
    public var cancelAtPeriodEnd: Bool
    /// Unix seconds: a cancellation scheduled for a set time.
    public var cancelAt: Int64?
    public var canceledAt: Int64?
    public var endedAt: Int64?
    public var trialStart: Int64?
    public var trialEnd: Int64?
    public var created: Int64
    public var livemode: Bool
    public var metadata: [String: String]
    public var items: StripeList<Item>
    public var cancellationDetails: CancellationDetails?
    public var latestInvoice: String?

    /// `status` of a subscription.
    public enum Status: Hashable, Sendable, TextCoded {
        case trialing, active, pastDue, unpaid, canceled, incomplete, incompleteExpired, paused
        case unknown(String)

        public init(_ text: String) {
            switch text {
            case "trialing": self = .trialing
            case "active": self = .active
            case "past_due": self = .pastDue
            case "unpaid": self = .unpaid
            case "canceled": self = .canceled
            case "incomplete": self = .incomplete
            case "incomplete_expired": self = .incompleteExpired
            case "paused": self = .paused
            default: self = .unknown(text)
            }
        }

        public var text: String {
            switch self {
            case .trialing: return "trialing"
            case .active: return "active"
            case .pastDue: return "past_due"
            case .unpaid: return "unpaid"
            case .canceled: return "canceled"
            case .incomplete: return "incomplete"
            case .incompleteExpired: return "incomplete_expired"
            case .paused: return "paused"
            case .unknown(let text): return text
            }
        }
    }

    public struct Item: Codable, Sendable, Equatable {
        public var id: String
        public var price: StripePrice
        public var quantity: Int64?
        /// Unix seconds (on the item since `2025-03-31.basil`).
        public var currentPeriodStart: Int64
        public var currentPeriodEnd: Int64

        public init(id: String, price: StripePrice, quantity: Int64? = 1, currentPeriodStart: Int64, currentPeriodEnd: Int64) {
            self.id = id
            self.price = price
            self.quantity = quantity
            self.currentPeriodStart = currentPeriodStart
            self.currentPeriodEnd = currentPeriodEnd
        }

        enum CodingKeys: String, CodingKey {
            case id, price, quantity
            case currentPeriodStart = "current_period_start"
            case currentPeriodEnd = "current_period_end"
        }
    }

    /// `cancellation_details`: why it was cancelled (`cancellation_requested`, `payment_failed`, `payment_disputed`).
    public struct CancellationDetails: Codable, Sendable, Equatable {
        public var reason: String?

        public init(reason: String?) { self.reason = reason }
    }

    public init(
        id: String, customer: String?, status: Status, cancelAtPeriodEnd: Bool = false, cancelAt: Int64? = nil, canceledAt: Int64? = nil,
        endedAt: Int64? = nil, trialStart: Int64? = nil, trialEnd: Int64? = nil, created: Int64, livemode: Bool = false,
        metadata: [String: String] = [:], items: [Item], cancellationDetails: CancellationDetails? = nil, latestInvoice: String? = nil
    ) {
        self.id = id
        self.customer = customer
        self.status = status
        self.cancelAtPeriodEnd = cancelAtPeriodEnd
        self.cancelAt = cancelAt
        self.canceledAt = canceledAt
        self.endedAt = endedAt
        self.trialStart = trialStart
        self.trialEnd = trialEnd
        self.created = created
        self.livemode = livemode
        self.metadata = metadata
        self.items = StripeList(data: items)
        self.cancellationDetails = cancellationDetails
        self.latestInvoice = latestInvoice
    }

    enum CodingKeys: String, CodingKey {
        case id, customer, status, created, livemode, metadata, items
        case cancelAtPeriodEnd = "cancel_at_period_end"
        case cancelAt = "cancel_at"
        case canceledAt = "canceled_at"
        case endedAt = "ended_at"
        case trialStart = "trial_start"
        case trialEnd = "trial_end"
        case cancellationDetails = "cancellation_details"
        case latestInvoice = "latest_invoice"
    }

    /// The item that decides the tier: the first (Storekeeper's checkout creates one item per subscription).
    public var primaryItem: Item? { items.data.first }

    /// The account the subscription's metadata names (`metadata.storekeeper_account_id`).
    public var accountMetadata: String? { metadata[Self.accountMetadataKey] }

    /// Where the app's account id is kept on a subscription (and copied there by checkout's `subscription_data`).
    public static let accountMetadataKey = "storekeeper_account_id"
    /// Where Storekeeper's checkout notes the catalogue product a session sells.
    public static let productMetadataKey = "storekeeper_product_id"
}

/// A price (`price_…`): the amount of one period in the currency's minor unit, and its recurrence.
public struct StripePrice: Codable, Sendable, Equatable {
    public var id: String
    public var unitAmount: Int64?
    public var currency: String
    public var recurring: Recurring?

    public struct Recurring: Codable, Sendable, Equatable {
        /// `day`, `week`, `month`, `year`.
        public var interval: String
        public var intervalCount: Int

        public init(interval: String, intervalCount: Int = 1) {
            self.interval = interval
            self.intervalCount = intervalCount
        }

        enum CodingKeys: String, CodingKey {
            case interval
            case intervalCount = "interval_count"
        }
    }

    public init(id: String, unitAmount: Int64?, currency: String, recurring: Recurring?) {
        self.id = id
        self.unitAmount = unitAmount
        self.currency = currency
        self.recurring = recurring
    }

    enum CodingKeys: String, CodingKey {
        case id, currency, recurring
        case unitAmount = "unit_amount"
    }
}
