import Entitlements

/// The tier catalogue (`config/tiers.yml`, SPEC §7): meters, typed feature definitions, the free tier, paid tiers with
/// their products, allowances and feature values, consumable top-up products, and how an upgrade's credits are
/// granted. Decoded from YAML by the runtime; validated as a whole by ``problems()``.
public struct TierCatalogue: Codable, Sendable, Equatable {
    public var meters: [Meter]
    /// What the app gates on (`model`, `images`, `context_quilt`): each tier's value is typed by its definition.
    public var featureDefinitions: [FeatureDefinition]
    public var free: FreeTier
    public var tiers: [Tier]
    public var topUps: [TopUp]
    /// What the first window of an upgrade grants (`upgrade_credits`).
    public var upgradeCredits: UpgradeCredits
    /// Where customers manage Stripe subscriptions: the billing portal's login link
    /// (`STOREKEEPER_STRIPE_PORTAL_URL`), a setting of the deployment rather than of the catalogue file.
    public var stripePortalURL: String?
    /// The Android app's package (`STOREKEEPER_GOOGLE_PACKAGE_NAME`): Play's subscription centre links name it.
    public var googlePlayPackageName: String?

    enum CodingKeys: String, CodingKey {
        case meters, free, tiers
        case featureDefinitions = "feature_definitions"
        case topUps = "top_ups"
        case upgradeCredits = "upgrade_credits"
    }

    public init(
        meters: [Meter], featureDefinitions: [FeatureDefinition] = [], free: FreeTier, tiers: [Tier], topUps: [TopUp],
        upgradeCredits: UpgradeCredits = .prorate
    ) {
        self.meters = meters
        self.featureDefinitions = featureDefinitions
        self.free = free
        self.tiers = tiers
        self.topUps = topUps
        self.upgradeCredits = upgradeCredits
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        meters = try container.decode([Meter].self, forKey: .meters)
        featureDefinitions = try container.decodeIfPresent([FeatureDefinition].self, forKey: .featureDefinitions) ?? []
        free = try container.decode(FreeTier.self, forKey: .free)
        tiers = try container.decode([Tier].self, forKey: .tiers)
        topUps = try container.decodeIfPresent([TopUp].self, forKey: .topUps) ?? []
        upgradeCredits = try container.decodeIfPresent(UpgradeCredits.self, forKey: .upgradeCredits) ?? .prorate
    }

    /// How the first credit window of an upgrade is granted.
    public enum UpgradeCredits: Hashable, Sendable, TextCoded {
        /// The new tier's allowance times the share of the window the customer pays for after Apple's pro-rata
        /// refund; what is left of the old window moves to top-ups (FASHN's rule).
        case prorate
        /// The new tier's full allowance; the old window's remaining credits end with it and nothing carries over
        /// (GhostPour's rule).
        case fresh
        /// Written in the file, refused at start (``TierCatalogue/problems()``).
        case unknown(String)

        public init(_ text: String) {
            switch text {
            case "prorate": self = .prorate
            case "fresh": self = .fresh
            default: self = .unknown(text)
            }
        }

        public var text: String {
            switch self {
            case .prorate: return "prorate"
            case .fresh: return "fresh"
            case .unknown(let text): return text
            }
        }
    }

    /// Something usage is counted in (`ai_requests`, `lookups`).
    public struct Meter: Codable, Sendable, Equatable {
        public var id: String
        public var displayName: String
        public var description: String?
        /// Remaining balances at which the app hears `credits.low` (or `credits.exhausted` at 0), once per window.
        public var warnAt: [WarningThreshold]

        enum CodingKeys: String, CodingKey {
            case id, description
            case displayName = "display_name"
            case warnAt = "warn_at"
        }

        public init(id: String, displayName: String, description: String? = nil, warnAt: [WarningThreshold] = []) {
            self.id = id
            self.displayName = displayName
            self.description = description
            self.warnAt = warnAt
        }

        public init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            id = try container.decode(String.self, forKey: .id)
            displayName = try container.decode(String.self, forKey: .displayName)
            description = try container.decodeIfPresent(String.self, forKey: .description)
            warnAt = try container.decodeIfPresent([WarningThreshold].self, forKey: .warnAt) ?? []
        }

        public func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(id, forKey: .id)
            try container.encode(displayName, forKey: .displayName)
            try container.encodeIfPresent(description, forKey: .description)
            if !warnAt.isEmpty { try container.encode(warnAt, forKey: .warnAt) }
        }
    }

    /// What every account without an entitlement gets.
    public struct FreeTier: Codable, Sendable, Equatable {
        public var displayName: String
        public var description: String?
        /// Display bullets for the paywall (`highlights`; a `features` list written before typed features loads here).
        public var highlights: [String]?
        /// Feature values, as written (typed by ``TierCatalogue/featureDefinitions``).
        public var features: [String: String]
        public var allowances: [String: Allowance]
        /// `features` was a list of bullets (loaded as ``highlights``, with a warning).
        public var featuresWereBullets: Bool

        enum CodingKeys: String, CodingKey {
            case description, highlights, features, allowances
            case displayName = "display_name"
        }

        public init(
            displayName: String, description: String? = nil, highlights: [String]? = nil, features: [String: String] = [:],
            allowances: [String: Allowance]
        ) {
            self.displayName = displayName
            self.description = description
            self.highlights = highlights
            self.features = features
            self.allowances = allowances
            self.featuresWereBullets = false
        }

        public init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            displayName = try container.decode(String.self, forKey: .displayName)
            description = try container.decodeIfPresent(String.self, forKey: .description)
            (highlights, features, featuresWereBullets) = try FeatureValues.decode(container, highlights: .highlights, features: .features)
            allowances = try container.decode([String: Allowance].self, forKey: .allowances)
        }

        public func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(displayName, forKey: .displayName)
            try container.encodeIfPresent(description, forKey: .description)
            try container.encodeIfPresent(highlights, forKey: .highlights)
            if !features.isEmpty { try container.encode(features, forKey: .features) }
            try container.encode(allowances, forKey: .allowances)
        }
    }

    /// A paid tier: one subscription-group level, the products that sell it, and what it grants.
    public struct Tier: Codable, Sendable, Equatable {
        public var id: String
        /// The subscription-group level: 1 is the highest.
        public var level: Int
        public var displayName: String
        public var description: String?
        /// Display bullets for the paywall.
        public var highlights: [String]?
        /// Feature values, as written (typed by ``TierCatalogue/featureDefinitions``).
        public var features: [String: String]
        public var products: [Product]
        public var allowances: [String: Allowance]
        /// A tier no store sells (GhostPour's `admin`): only operator grants entitle it.
        public var grantableOnly: Bool
        /// Tiers of one group replace each other (Apple's subscription group); two auto-renewing sources in one group
        /// are an overlap the customer may want to cancel. One group, `default`, unless named.
        public var group: String
        public var featuresWereBullets: Bool

        enum CodingKeys: String, CodingKey {
            case id, level, description, highlights, features, products, allowances, group
            case displayName = "display_name"
            case grantableOnly = "grantable_only"
        }

        public init(
            id: String, level: Int, displayName: String, description: String? = nil, highlights: [String]? = nil,
            features: [String: String] = [:], products: [Product], allowances: [String: Allowance], grantableOnly: Bool = false,
            group: String = "default"
        ) {
            self.id = id
            self.level = level
            self.displayName = displayName
            self.description = description
            self.highlights = highlights
            self.features = features
            self.products = products
            self.allowances = allowances
            self.grantableOnly = grantableOnly
            self.group = group
            self.featuresWereBullets = false
        }

        public init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            id = try container.decode(String.self, forKey: .id)
            level = try container.decode(Int.self, forKey: .level)
            displayName = try container.decode(String.self, forKey: .displayName)
            description = try container.decodeIfPresent(String.self, forKey: .description)
            (highlights, features, featuresWereBullets) = try FeatureValues.decode(container, highlights: .highlights, features: .features)
            products = try container.decodeIfPresent([Product].self, forKey: .products) ?? []
            allowances = try container.decode([String: Allowance].self, forKey: .allowances)
            grantableOnly = try container.decodeIfPresent(Bool.self, forKey: .grantableOnly) ?? false
            group = try container.decodeIfPresent(String.self, forKey: .group) ?? "default"
        }

        public func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(id, forKey: .id)
            try container.encode(level, forKey: .level)
            try container.encode(displayName, forKey: .displayName)
            try container.encodeIfPresent(description, forKey: .description)
            try container.encodeIfPresent(highlights, forKey: .highlights)
            if !features.isEmpty { try container.encode(features, forKey: .features) }
            try container.encode(products, forKey: .products)
            try container.encode(allowances, forKey: .allowances)
            if grantableOnly { try container.encode(true, forKey: .grantableOnly) }
            try container.encode(group, forKey: .group)
        }
    }

    /// The tier and product of a product id.
    public func tier(ofProduct productId: String) -> (tier: Tier, product: Product)? {
        for tier in tiers {
            if let product = tier.products.first(where: { $0.id == productId }) { return (tier, product) }
        }
        return nil
    }

    /// The ids of the auto-renewable products the catalogue sells — in `store`, or in every store.
    public func subscriptionProducts(of store: Store?) -> Set<String> {
        Set(tiers.flatMap { $0.products.filter { $0.type == .autoRenewable && (store == nil || $0.store == store) }.map(\.id) })
    }

    /// The tier of a tier id (`free` is not one).
    public func tier(id: String) -> Tier? { tiers.first { $0.id == id } }

    /// The allowances of a tier id, `free` included; empty for an id the catalogue does not know.
    public func allowances(ofTier id: String) -> [String: Allowance] {
        id == "free" ? free.allowances : tier(id: id)?.allowances ?? [:]
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
