/// The decoded `signedPayload` Apple POSTs to a Get Retention Message endpoint (`DecodedRealtimeRequestBody`,
/// Retention Messaging API 1.0): a customer is looking at their subscription in the App Store and may cancel it.
public struct RetentionRequestPayload: Codable, Sendable, Equatable {
    public var originalTransactionId: String
    public var appAppleId: Int64?
    public var productId: String
    /// The device's locale, such as `en-US`.
    public var userLocale: String?
    /// A UUID Apple makes for each request.
    public var requestIdentifier: String
    /// Milliseconds since 1970.
    public var signedDate: Int64
    public var environment: AppStoreEnvironment?

    public init(
        originalTransactionId: String, appAppleId: Int64?, productId: String, userLocale: String?, requestIdentifier: String,
        signedDate: Int64, environment: AppStoreEnvironment?
    ) {
        self.originalTransactionId = originalTransactionId
        self.appAppleId = appAppleId
        self.productId = productId
        self.userLocale = userLocale
        self.requestIdentifier = requestIdentifier
        self.signedDate = signedDate
        self.environment = environment
    }
}

/// The answer to a Get Retention Message request (`RealtimeResponseBody`): exactly one of a message, a switch-plan
/// suggestion or a promotional offer, each naming a message uploaded to Apple and approved.
public enum RetentionAnswer: Sendable, Equatable, Encodable {
    case message(messageIdentifier: String)
    /// `billingPlanType` (`BILLED_UPFRONT` | `MONTHLY`) only for a product with a 12-month commitment.
    case alternateProduct(messageIdentifier: String, productId: String, billingPlanType: String?)
    /// `signatureV2`: the promotional-offer JWS (`aud` `promotional-offer`).
    case promotionalOffer(messageIdentifier: String, signatureV2: String)

    /// The answer's kind as events and the dashboard name it.
    public var kind: String {
        switch self {
        case .message: "message"
        case .alternateProduct: "alternate_product"
        case .promotionalOffer: "promotional_offer"
        }
    }

    public var messageIdentifier: String {
        switch self {
        case .message(let id), .alternateProduct(let id, _, _), .promotionalOffer(let id, _): id
        }
    }

    enum Key: String, CodingKey {
        case message, alternateProduct, promotionalOffer, messageIdentifier, productId, billingPlanType, promotionalOfferSignatureV2
    }

    public func encode(to encoder: any Encoder) throws {
        var outer = encoder.container(keyedBy: Key.self)
        switch self {
        case .message(let id):
            var inner = outer.nestedContainer(keyedBy: Key.self, forKey: .message)
            try inner.encode(id, forKey: .messageIdentifier)
        case .alternateProduct(let id, let productId, let plan):
            var inner = outer.nestedContainer(keyedBy: Key.self, forKey: .alternateProduct)
            try inner.encode(id, forKey: .messageIdentifier)
            try inner.encode(productId, forKey: .productId)
            try inner.encodeIfPresent(plan, forKey: .billingPlanType)
        case .promotionalOffer(let id, let signature):
            var inner = outer.nestedContainer(keyedBy: Key.self, forKey: .promotionalOffer)
            try inner.encode(id, forKey: .messageIdentifier)
            try inner.encode(signature, forKey: .promotionalOfferSignatureV2)
        }
    }
}
