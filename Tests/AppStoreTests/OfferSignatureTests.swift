import Crypto
import Foundation
import HummingbirdTesting
import Testing

@testable import IntegrationSupport

/// Offer signatures through the API, checked the way StoreKit and Apple check them: the original promotional-offer
/// signature against the public key over the fields Apple documents (bundle id, key id, product, offer,
/// appAccountToken, nonce, timestamp, joined by U+2063), and every JWS by its header, its claims and its ES256
/// signature — built here from Apple's documentation, not from Storekeeper's signer.
@Suite("Offer signatures")
struct OfferSignatureTests {
    static func base64URL(_ text: Substring) -> Data? {
        var base64 = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while base64.count % 4 != 0 { base64 += "=" }
        return Data(base64Encoded: base64)
    }

    /// The header and claims of a compact JWS whose ES256 signature `key` verifies; nil otherwise.
    static func verifiedJWS<Claims: Decodable>(_ jws: String, key: P256.Signing.PublicKey, claims _: Claims.Type) -> (
        header: OfferJWSHeader, claims: Claims
    )? {
        let parts = jws.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, let headerData = base64URL(parts[0]), let claimsData = base64URL(parts[1]),
            let signatureData = base64URL(parts[2]), let signature = try? P256.Signing.ECDSASignature(rawRepresentation: signatureData),
            key.isValidSignature(signature, for: Data("\(parts[0]).\(parts[1])".utf8)),
            let header = try? decode(OfferJWSHeader.self, headerData), let claims = try? decode(Claims.self, claimsData)
        else { return nil }
        return (header, claims)
    }

    @Test("promotional: the original signature and the JWS verify field by field; win-back only when lapsed, once per account")
    func promotional() async throws {
        try await FakeApple.run { apple in
            try await apple.harness(extra: ["STOREKEEPER_OFFERS": StorekeeperHarness.offers]) { harness in
                try await harness.withHTTP { client in
                    let publicKey = apple.privateKey.publicKey
                    let account = UUID()
                    var flow = LifecycleFlow(harness: harness, client: client, account: account)
                    try await flow.send(.subscribe)
                    let early = try await client.withKey(.post, "/v1/offers/promotional", #"{"accountId": "\#(account)", "offerId": "winback"}"#)
                    #expect(try early.status == .forbidden && early.answer(ErrorAnswer.self).error == "not_eligible")
                    try await flow.send(.expire)

                    let before = Int64(Date().timeIntervalSince1970 * 1000)
                    let response = try await client.withKey(
                        .post,
                        "/v1/offers/promotional",
                        #"{"accountId": "\#(account)", "offerId": "winback", "transactionId": "\#(flow.originalTransactionId)"}"#)
                    #expect(response.status == .ok)
                    let body = try response.answer(PromotionalOfferAnswer.self)
                    let nonce = body.nonce
                    let timestamp = body.timestamp
                    #expect(UUID(uuidString: nonce) != nil && nonce == nonce.lowercased())
                    #expect(timestamp >= before - 1000 && timestamp <= before + 60_000)
                    #expect(body.keyId == "KEY123" && body.productId == "pro.monthly")
                    #expect(body.appAccountToken == account.uuidString.lowercased())

                    // Apple's documented payload: bundle id, key id, product, offer, appAccountToken, nonce, timestamp.
                    func payload(offer: String = "winback", token: String = account.uuidString.lowercased()) -> Data {
                        Data(
                            [StorekeeperHarness.bundleId, "KEY123", "pro.monthly", offer, token, nonce, String(timestamp)]
                                .joined(separator: "\u{2063}").utf8)
                    }
                    let encoded = body.signature
                    let der = try #require(Data(base64Encoded: encoded))
                    let signature = try P256.Signing.ECDSASignature(derRepresentation: der)
                    #expect(publicKey.isValidSignature(signature, for: payload()))
                    #expect(!publicKey.isValidSignature(signature, for: payload(offer: "stay")))
                    #expect(!publicKey.isValidSignature(signature, for: payload(token: UUID().uuidString.lowercased())))
                    #expect(!P256.Signing.PrivateKey().publicKey.isValidSignature(signature, for: payload()))

                    let compact = body.jws
                    let jws = try #require(Self.verifiedJWS(compact, key: publicKey, claims: PromotionalOfferClaims.self))
                    #expect(jws.header.alg == "ES256" && jws.header.kid == "KEY123" && jws.header.typ == "JWT")
                    #expect(jws.claims.iss == "issuer-1" && jws.claims.aud == "promotional-offer")
                    #expect(jws.claims.bid == StorekeeperHarness.bundleId && jws.claims.nonce == nonce)
                    #expect(jws.claims.productId == "pro.monthly" && jws.claims.offerIdentifier == "winback")
                    #expect(jws.claims.transactionId == flow.originalTransactionId)
                    #expect(abs(jws.claims.iat - before / 1000) < 60)

                    let again = try await client.withKey(.post, "/v1/offers/promotional", #"{"accountId": "\#(account)", "offerId": "winback"}"#)
                    #expect(try again.status == .forbidden && again.answer(ErrorAnswer.self).message.contains("once per account") == true)
                    let stay = try await client.withKey(.post, "/v1/offers/promotional", #"{"accountId": "\#(account)", "offerId": "stay"}"#)
                    #expect(stay.status == .forbidden)
                    let stranger = try await client.withKey(
                        .post, "/v1/offers/promotional", #"{"accountId": "never-subscribed", "offerId": "winback"}"#)
                    #expect(stranger.status == .forbidden)

                    var active = LifecycleFlow(harness: harness, client: client, account: UUID())
                    try await active.send(.subscribe)
                    for _ in 0..<2 {
                        let retained = try await client.withKey(
                            .post,
                            "/v1/offers/promotional", #"{"accountId": "\#(active.subscription.accountId!)", "offerId": "stay"}"#)
                        #expect(retained.status == .ok, "an offer not given once per account is signed every time")
                    }

                    #expect(try await client.withKey(.post, "/v1/offers/promotional", #"{"accountId": "a", "offerId": "nope"}"#).status == .notFound)
                    #expect(try await client.withKey(.post, "/v1/offers/promotional", #"{"offerId": "winback"}"#).status == .badRequest)
                    #expect(
                        try await client.withKey(
                            .post, "/v1/offers/promotional", #"{"accountId": "a", "offerId": "winback", "appAccountToken": "x"}"#
                        ).status == .badRequest)
                    #expect(
                        try await client.withKey(
                            .post, "/v1/offers/promotional", #"{"accountId": "a", "offerId": "winback", "transactionId": "1; drop"}"#
                        ).status == .badRequest)
                }
            }
        }
    }

    @Test("introductory eligibility: a signed yes for an account that never subscribed, a signed no after; unknown product 404")
    func introductory() async throws {
        try await FakeApple.run { apple in
            try await apple.harness(worker: true) { harness in
                try await harness.withHTTP { client in
                    let account = UUID()
                    func eligibility(_ product: String = "pro.monthly") async throws -> TestResponse {
                        try await client.withKey(
                            .post,
                            "/v1/offers/introductory-eligibility",
                            #"{"accountId": "\#(account)", "productId": "\#(product)", "transactionId": "2000000001"}"#)
                    }
                    let fresh = try await eligibility()
                    #expect(try fresh.status == .ok && fresh.answer(IntroductoryEligibilityAnswer.self).allowIntroductoryOffer == true)
                    let freshJWS = try fresh.answer(IntroductoryEligibilityAnswer.self).jws
                    let claims = try #require(
                        Self.verifiedJWS(freshJWS, key: apple.privateKey.publicKey, claims: IntroductoryEligibilityClaims.self)?.claims)
                    #expect(claims.aud == "introductory-offer-eligibility" && claims.allowIntroductoryOffer == true)
                    #expect(claims.productId == "pro.monthly" && claims.transactionId == "2000000001")
                    #expect(claims.iss == "issuer-1" && claims.bid == StorekeeperHarness.bundleId)
                    #expect(UUID(uuidString: claims.nonce) != nil)

                    var flow = LifecycleFlow(harness: harness, client: client, account: account)
                    try await flow.send(.subscribe)
                    let used = try await eligibility("max.monthly")
                    #expect(try used.status == .ok && used.answer(IntroductoryEligibilityAnswer.self).allowIntroductoryOffer == false)
                    let usedJWS = try used.answer(IntroductoryEligibilityAnswer.self).jws
                    let denied = try #require(
                        Self.verifiedJWS(usedJWS, key: apple.privateKey.publicKey, claims: IntroductoryEligibilityClaims.self)?.claims)
                    #expect(denied.allowIntroductoryOffer == false)

                    #expect(try await eligibility("credits.100").status == .notFound)
                    #expect(
                        try await client.withKey(
                            .post,
                            "/v1/offers/introductory-eligibility", #"{"accountId": "a", "productId": "pro.monthly"}"#
                        ).status == .badRequest)
                }
            }
        }
    }

    @Test("without the In-App Purchase key, offer routes are not served: 404 `not_configured` with what to set, never a 5xx")
    func unconfigured() async throws {
        try await StorekeeperHarness.run(worker: false) { harness in
            try await harness.withHTTP { client in
                let response = try await client.withKey(.post, "/v1/offers/promotional", #"{"accountId": "a", "offerId": "winback"}"#)
                #expect(try response.status == .notFound && response.answer(ErrorAnswer.self).error == "not_configured")
                #expect(try response.answer(ErrorAnswer.self).message.contains("STOREKEEPER_ASSA") == true)
            }
        }
    }
}
