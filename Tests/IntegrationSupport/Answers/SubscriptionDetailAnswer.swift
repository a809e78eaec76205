/// `GET /v1/subscriptions/{originalTransactionId}` and `GET /v1/stores/{store}/subscriptions/{subscriptionId}`
/// (SPEC §5.2: the status's `subscription` plus `accountId` and `lastEventType`; openapi `SubscriptionDetail`). The
/// status's fields are read as ``SubscriptionAnswer`` reads them, and reached as if they were this answer's own.
@dynamicMemberLookup
struct SubscriptionDetailAnswer: Decodable, Sendable {
    var subscription: SubscriptionAnswer
    @RequiredNullable var accountId: String?
    var lastEventType: String
    @RequiredNullable var endReason: String?
    @RequiredNullable var revokedAt: String?
    @RequiredNullable var offer: OfferAnswer?
    @RequiredNullable var priceIncrease: String?

    /// The offer a subscription's current period was bought with.
    struct OfferAnswer: Decodable, Sendable {
        var type: Int
        var identifier: String?
        var discountType: String?
        var period: String?
    }

    enum CodingKeys: String, CodingKey { case accountId, lastEventType, endReason, revokedAt, offer, priceIncrease }

    init(from decoder: any Decoder) throws {
        subscription = try SubscriptionAnswer(from: decoder)
        let container = try decoder.container(keyedBy: CodingKeys.self)
        _accountId = try container.decode(RequiredNullable<String>.self, forKey: .accountId)
        lastEventType = try container.decode(String.self, forKey: .lastEventType)
        _endReason = try container.decode(RequiredNullable<String>.self, forKey: .endReason)
        _revokedAt = try container.decode(RequiredNullable<String>.self, forKey: .revokedAt)
        _offer = try container.decode(RequiredNullable<OfferAnswer>.self, forKey: .offer)
        _priceIncrease = try container.decode(RequiredNullable<String>.self, forKey: .priceIncrease)
    }

    subscript<Value>(dynamicMember keyPath: KeyPath<SubscriptionAnswer, Value>) -> Value { subscription[keyPath: keyPath] }
}
