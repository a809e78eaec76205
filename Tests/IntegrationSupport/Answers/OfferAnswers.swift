/// `POST /v1/offers/promotional`: the original promotional-offer signature and its JWS form
/// (openapi `PromotionalOfferSignature`).
struct PromotionalOfferAnswer: Decodable, Sendable {
    var productId: String
    var offerId: String
    var keyId: String
    var nonce: String
    var timestamp: Int64
    var appAccountToken: String
    var signature: String
    var jws: String
}

/// `POST /v1/offers/introductory-eligibility` (openapi `IntroductoryEligibility`).
struct IntroductoryEligibilityAnswer: Decodable, Sendable {
    var productId: String
    var allowIntroductoryOffer: Bool
    var reason: String?
    var jws: String
}

/// The header of the JWS in an offer answer's `jws`, as Apple documents it for signed offer requests.
struct OfferJWSHeader: Decodable, Sendable {
    var alg: String
    var kid: String
    var typ: String
}

/// The claims of the promotional-offer JWS in `POST /v1/offers/promotional`'s `jws`, as Apple documents the
/// promotional offer signature's payload (`transactionId` is optional there).
struct PromotionalOfferClaims: Decodable, Sendable {
    var iss: String
    var iat: Int64
    var bid: String
    var aud: String
    var nonce: String
    var productId: String
    var offerIdentifier: String
    var transactionId: String?
}

/// The claims of the JWS in `POST /v1/offers/introductory-eligibility`'s `jws`, as Apple documents the introductory
/// offer eligibility signature's payload.
struct IntroductoryEligibilityClaims: Decodable, Sendable {
    var iss: String
    var iat: Int64
    var bid: String
    var aud: String
    var nonce: String
    var productId: String
    var allowIntroductoryOffer: Bool
    var transactionId: String
}
