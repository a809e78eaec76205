/// `GET /v1/tiers`: the server-driven paywall (SPEC §5.2; openapi `Tiers`).
struct TiersAnswer: Decodable, Sendable {
    var meters: [Meter]
    var featureDefinitions: [FeatureDefinition]
    var upgradeCredits: String
    var free: Tier
    var tiers: [Tier]
    var topUps: [TopUp]

    /// A meter's definition.
    struct Meter: Decodable, Sendable {
        var id: String
        var displayName: String
        var description: String?
    }

    /// A feature a paywall shows.
    struct FeatureDefinition: Decodable, Sendable {
        var id: String
        var displayName: String
        var description: String?
        var type: String
        var levels: [String]?
        var teaser: String?
        var upgradeCallToAction: String?
        var `default`: String?
    }

    /// A tier (openapi `Tier`).
    struct Tier: Decodable, Sendable {
        var id: String
        var level: Int?
        var displayName: String
        var description: String?
        var highlights: [String]
        var features: [String]
        var featureValues: [String: FeatureValueAnswer]
        var products: [Product]
        var allowances: [String: Allowance]
    }

    /// A product selling a tier (openapi `Product`).
    struct Product: Decodable, Sendable {
        var id: String
        var store: String
        var type: String
        var period: String?
        var duration: String?
        var price: Int64
        var currency: String
        var displayPrice: String
    }

    /// A tier's allowance of one meter (openapi `Allowance`).
    struct Allowance: Decodable, Sendable {
        var perCycle: Int64?
        var perDay: Int64?
        var unlimited: Bool
        var trialCap: Int64?
        var resetsMonthly: Bool?
    }

    /// A consumable that tops a meter up.
    struct TopUp: Decodable, Sendable {
        var id: String
        var store: String
        var meter: String
        var credits: Int64
        var price: Int64?
        var currency: String?
    }
}
