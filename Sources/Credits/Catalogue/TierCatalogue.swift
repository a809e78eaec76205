/// The tier catalogue (`config/tiers.yml`, SPEC §7): meters, the free tier, paid tiers with their App Store
/// products and allowances, and consumable top-up products. Decoded from YAML by the runtime; validated as a whole by
/// ``problems()``.
public struct TierCatalogue: Codable, Sendable, Equatable {
    public var meters: [Meter]
    public var free: FreeTier
    public var tiers: [Tier]
    public var topUps: [TopUp]

    enum CodingKeys: String, CodingKey {
        case meters, free, tiers
        case topUps = "top_ups"
    }

    public init(meters: [Meter], free: FreeTier, tiers: [Tier], topUps: [TopUp]) {
        self.meters = meters
        self.free = free
        self.tiers = tiers
        self.topUps = topUps
    }

    /// Something usage is counted in (`ai_requests`, `lookups`).
    public struct Meter: Codable, Sendable, Equatable {
        public var id: String
        public var displayName: String
        public var description: String?

        enum CodingKeys: String, CodingKey {
            case id, description
            case displayName = "display_name"
        }

        public init(id: String, displayName: String, description: String? = nil) {
            self.id = id
            self.displayName = displayName
            self.description = description
        }
    }

    /// What every account without an entitled subscription gets.
    public struct FreeTier: Codable, Sendable, Equatable {
        public var displayName: String
        public var description: String?
        public var features: [String]?
        public var allowances: [String: Allowance]

        enum CodingKeys: String, CodingKey {
            case description, features, allowances
            case displayName = "display_name"
        }

        public init(displayName: String, description: String? = nil, features: [String]? = nil, allowances: [String: Allowance]) {
            self.displayName = displayName
            self.description = description
            self.features = features
            self.allowances = allowances
        }
    }

    /// A paid tier: one Apple subscription-group level and its products.
    public struct Tier: Codable, Sendable, Equatable {
        public var id: String
        /// Apple's subscription-group level: 1 is the highest.
        public var level: Int
        public var displayName: String
        public var description: String?
        public var features: [String]?
        public var products: [Product]
        public var allowances: [String: Allowance]

        enum CodingKeys: String, CodingKey {
            case id, level, description, features, products, allowances
            case displayName = "display_name"
        }

        public init(
            id: String, level: Int, displayName: String, description: String? = nil, features: [String]? = nil,
            products: [Product], allowances: [String: Allowance]
        ) {
            self.id = id
            self.level = level
            self.displayName = displayName
            self.description = description
            self.features = features
            self.products = products
            self.allowances = allowances
        }
    }

    /// An auto-renewable App Store product of a tier.
    public struct Product: Codable, Sendable, Equatable {
        public var id: String
        /// ISO 8601 period: `P1W`, `P1M`, `P3M`, `P6M`, `P1Y`.
        public var period: String
        /// Catalogue price in milliunits of `currency`, used when a transaction carries none.
        public var price: Int64
        public var currency: String

        public init(id: String, period: String, price: Int64, currency: String) {
            self.id = id
            self.period = period
            self.price = price
            self.currency = currency
        }

        public var billingPeriod: BillingPeriod? { BillingPeriod(iso8601: period) }
    }

    /// A consumable App Store product that buys top-up credits of one meter.
    public struct TopUp: Codable, Sendable, Equatable {
        public var id: String
        public var meter: String
        public var credits: Int64
        public var price: Int64?
        public var currency: String?

        public init(id: String, meter: String, credits: Int64, price: Int64? = nil, currency: String? = nil) {
            self.id = id
            self.meter = meter
            self.credits = credits
            self.price = price
            self.currency = currency
        }
    }

    /// The tier and product of an App Store product id.
    public func tier(ofProduct productId: String) -> (tier: Tier, product: Product)? {
        for tier in tiers {
            if let product = tier.products.first(where: { $0.id == productId }) { return (tier, product) }
        }
        return nil
    }

    /// The top-up a consumable product id buys.
    public func topUp(ofProduct productId: String) -> TopUp? { topUps.first { $0.id == productId } }
}

/// How much of one meter a tier grants. Exactly one of `perCycle`, `perDay`, `unlimited` is set.
public struct Allowance: Codable, Sendable, Equatable {
    /// Credits per billing cycle (per month for annual products), reset — not carried over — at each cycle.
    public var perCycle: Int64?
    /// Credits per UTC day.
    public var perDay: Int64?
    public var unlimited: Bool?
    /// Cap on `perCycle` while a free-trial offer is active.
    public var trialCap: Int64?

    enum CodingKeys: String, CodingKey {
        case unlimited
        case perCycle = "per_cycle"
        case perDay = "per_day"
        case trialCap = "trial_cap"
    }

    public init(perCycle: Int64? = nil, perDay: Int64? = nil, unlimited: Bool? = nil, trialCap: Int64? = nil) {
        self.perCycle = perCycle
        self.perDay = perDay
        self.unlimited = unlimited
        self.trialCap = trialCap
    }

    public var isUnlimited: Bool { unlimited == true }

    /// The cycle grant for a period: the allowance, capped while in a free trial.
    public func cycleGrant(isTrial: Bool) -> Int64? {
        guard let perCycle else { return nil }
        guard isTrial, let trialCap else { return perCycle }
        return min(perCycle, trialCap)
    }
}
