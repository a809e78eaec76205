/// `GET /v1/accounts/{accountId}/status`, and the status `POST /v1/accounts/{accountId}/transactions` and
/// `POST /v1/accounts/{accountId}/google/purchases` answer with (SPEC §5.2; openapi `AccountStatus`).
struct StatusAnswer: Decodable, Sendable {
    var accountId: String
    var state: String
    var entitled: Bool
    @RequiredNullable var tier: String?
    var hadSubscription: Bool
    @RequiredNullable var subscription: SubscriptionAnswer?
    var credits: [String: MeterCreditsAnswer]
    @RequiredNullable var nextChangeAt: String?
    var entitlements: [EntitlementAnswer]
    var features: [String: FeatureValueAnswer]
}

/// The `subscription` object of a status answer (openapi `Subscription`).
struct SubscriptionAnswer: Decodable, Sendable {
    var originalTransactionId: String
    var productId: String
    var environment: String
    var status: String
    var willRenew: Bool
    @RequiredNullable var autoRenewProductId: String?
    @RequiredNullable var pendingProductId: String?
    @RequiredNullable var expiresAt: String?
    @RequiredNullable var gracePeriodExpiresAt: String?
    var isTrial: Bool
    var ownership: String
    var store: String
    var billingPlan: String
    @RequiredNullable var commitment: CommitmentAnswer?
    var winBackOfferIds: [String]
}

/// A commitment plan's progress in a subscription (openapi `Commitment`).
struct CommitmentAnswer: Decodable, Sendable {
    var period: Int
    var of: Int
    @RequiredNullable var endsAt: String?
    @RequiredNullable var renewsTo: String?
    @RequiredNullable var priceAfter: Int64?
}

/// One meter's entry in a status answer's `credits` (SPEC §5.2 and §7; openapi `MeterCredits`).
struct MeterCreditsAnswer: Decodable, Sendable {
    @RequiredNullable var remaining: Int64?
    @RequiredNullable var cycle: Int64?
    var topUp: Int64
    @RequiredNullable var resetsAt: String?
    @RequiredNullable var dailyRemaining: Int64?
    var unlimited: Bool
    var held: Int64
}

/// One entry of a status answer's `entitlements` (openapi `Entitlement`).
struct EntitlementAnswer: Decodable, Sendable {
    var id: String
    var source: String
    var store: String
    @RequiredNullable var productId: String?
    @RequiredNullable var tier: String?
    @RequiredNullable var expiresAt: String?
    var willRenew: Bool
    @RequiredNullable var managementUrl: String?
}

/// A feature's value in a status answer or a tier (openapi `FeatureValue`: boolean, number or string).
enum FeatureValueAnswer: Decodable, Sendable, Equatable {
    case boolean(Bool)
    case number(Double)
    case text(String)

    init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if let value = try? container.decode(Bool.self) {
            self = .boolean(value)
        } else if let value = try? container.decode(Double.self) {
            self = .number(value)
        } else {
            self = .text(try container.decode(String.self))
        }
    }
}
