import Entitlements

extension TierCatalogue {
    /// A product that sells a tier: an auto-renewable subscription, a lifetime unlock (a non-consumable) or a pass of
    /// fixed length (a non-renewing subscription).
    public struct Product: Codable, Sendable, Equatable {
        /// The store's product id: the App Store's product identifier, or a Stripe price id (`price_…`).
        public var id: String
        /// Which store sells it (`app_store`, the default, `stripe` or `google_play`).
        public var store: Store
        public var type: ProductType
        /// ISO 8601 billing period of an auto-renewable product: `P1W`, `P1M`, `P3M`, `P6M`, `P1Y`.
        public var period: String?
        /// How long a non-renewing purchase entitles, from its purchase (ISO 8601: `P30D`, `P3M`, `P1Y`): Apple's
        /// transaction carries no expiry for these.
        public var duration: String?
        /// Catalogue price in milliunits of `currency`, used when a transaction carries none.
        public var price: Int64
        public var currency: String

        enum CodingKeys: String, CodingKey { case id, store, type, period, duration, price, currency }

        public init(
            id: String, store: Store = .appStore, type: ProductType = .autoRenewable, period: String? = nil, duration: String? = nil, price: Int64,
            currency: String
        ) {
            self.id = id
            self.store = store
            self.type = type
            self.period = period
            self.duration = duration
            self.price = price
            self.currency = currency
        }

        public init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            id = try container.decode(String.self, forKey: .id)
            store = try container.decodeIfPresent(Store.self, forKey: .store) ?? .appStore
            type = try container.decodeIfPresent(ProductType.self, forKey: .type) ?? .autoRenewable
            period = try container.decodeIfPresent(String.self, forKey: .period)
            duration = try container.decodeIfPresent(String.self, forKey: .duration)
            price = try container.decode(Int64.self, forKey: .price)
            currency = try container.decode(String.self, forKey: .currency)
        }

        public var billingPeriod: BillingPeriod? { period.flatMap(BillingPeriod.init(iso8601:)) }
        /// A non-renewing product's length.
        public var entitlementDuration: BillingPeriod? { duration.flatMap(BillingPeriod.init(iso8601:)) }
    }

    /// What kind of purchase a product is.
    public enum ProductType: Hashable, Sendable, TextCoded {
        /// An auto-renewable subscription.
        case autoRenewable
        /// A non-consumable: entitles for good.
        case lifetime
        /// A non-renewing subscription: entitles for the product's `duration` from its purchase.
        case nonRenewing
        case unknown(String)

        public init(_ text: String) {
            switch text {
            case "auto_renewable": self = .autoRenewable
            case "lifetime": self = .lifetime
            case "non_renewing": self = .nonRenewing
            default: self = .unknown(text)
            }
        }

        public var text: String {
            switch self {
            case .autoRenewable: return "auto_renewable"
            case .lifetime: return "lifetime"
            case .nonRenewing: return "non_renewing"
            case .unknown(let text): return text
            }
        }
    }

    /// A consumable App Store product that buys top-up credits of one meter.
    public struct TopUp: Codable, Sendable, Equatable {
        /// The App Store's consumable product id, a Stripe one-time price id (`price_…`) or a Play product id.
        public var id: String
        /// Which store sells it (`app_store`, the default, `stripe` or `google_play`).
        public var store: Store
        public var meter: String
        public var credits: Int64
        public var price: Int64?
        public var currency: String?

        enum CodingKeys: String, CodingKey { case id, store, meter, credits, price, currency }

        public init(id: String, store: Store = .appStore, meter: String, credits: Int64, price: Int64? = nil, currency: String? = nil) {
            self.id = id
            self.store = store
            self.meter = meter
            self.credits = credits
            self.price = price
            self.currency = currency
        }

        public init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            id = try container.decode(String.self, forKey: .id)
            store = try container.decodeIfPresent(Store.self, forKey: .store) ?? .appStore
            meter = try container.decode(String.self, forKey: .meter)
            credits = try container.decode(Int64.self, forKey: .credits)
            price = try container.decodeIfPresent(Int64.self, forKey: .price)
            currency = try container.decodeIfPresent(String.self, forKey: .currency)
        }
    }
}
