/// `GET /v1/subscriptions/{originalTransactionId}` and `GET /v1/stores/{store}/subscriptions/{subscriptionId}`
/// (SPEC §5.2: the status's `subscription` plus `accountId` and `lastEventType`; openapi `SubscriptionDetail`).
struct SubscriptionDetailAnswer: Decodable, Sendable {
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
    @RequiredNullable var accountId: String?
    var lastEventType: String
    @RequiredNullable var endReason: String?
    @RequiredNullable var revokedAt: String?
    @RequiredNullable var offer: OfferAnswer?
    @RequiredNullable var priceIncrease: String?
    var billingPlan: String
    @RequiredNullable var commitment: CommitmentAnswer?
    var winBackOfferIds: [String]

    /// The offer a subscription's current period was bought with.
    struct OfferAnswer: Decodable, Sendable {
        var type: Int
        var identifier: String?
        var discountType: String?
        var period: String?
    }
}
