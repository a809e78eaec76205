import Crypto
import Foundation
import HummingbirdTesting
import Testing

/// Offer signatures through the API, checked the way StoreKit and Apple check them: the original promotional-offer
/// signature against the public key over the fields Apple documents (bundle id, key id, product, offer,
/// appAccountToken, nonce, timestamp, joined by U+2063), and every JWS by its header, its claims and its ES256
/// signature — built here from Apple's documentation, not from Storekeeper's signer.
@Suite("Offer signatures")
struct OfferSignatureTests {
    static let offers =
        #"{"offers": [{"id": "winback", "product": "pro.monthly", "audience": "lapsed"}, {"id": "stay", "product": "pro.monthly", "audience": "active", "once_per_account": false}]}"#

    static func base64URL(_ text: Substring) -> Data? {
        var base64 = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while base64.count % 4 != 0 { base64 += "=" }
        return Data(base64Encoded: base64)
    }

    /// The header and claims of a compact JWS whose ES256 signature `key` verifies; nil otherwise.
    static func verifiedJWS(_ jws: String, key: P256.Signing.PublicKey) -> (header: [String: Any], claims: [String: Any])? {
        let parts = jws.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, let headerData = base64URL(parts[0]), let claimsData = base64URL(parts[1]),
            let signatureData = base64URL(parts[2]), let signature = try? P256.Signing.ECDSASignature(rawRepresentation: signatureData),
            key.isValidSignature(signature, for: Data("\(parts[0]).\(parts[1])".utf8)),
            let header = try? JSONSerialization.jsonObject(with: headerData) as? [String: Any],
            let claims = try? JSONSerialization.jsonObject(with: claimsData) as? [String: Any]
        else { return nil }
        return (header, claims)
    }

    @Test("promotional: the original signature and the JWS verify field by field; win-back only when lapsed, once per account")
    func promotional() async throws {
        try await FakeApple.run { apple in
            try await apple.harness(extra: ["STOREKEEPER_OFFERS": Self.offers]) { harness in
                try await harness.withHTTP { client in
                    let publicKey = apple.privateKey.publicKey
                    let account = UUID()
                    var flow = LifecycleFlow(harness: harness, client: client, account: account)
                    try await flow.send(.subscribe)
                    let early = try await client.withKey(.post, "/v1/offers/promotional", #"{"accountId": "\#(account)", "offerId": "winback"}"#)
                    #expect(early.status == .forbidden && early.json["error"] as? String == "not_eligible")
                    try await flow.send(.expire)

                    let before = Int64(Date().timeIntervalSince1970 * 1000)
                    let response = try await client.withKey(
                        .post,
                        "/v1/offers/promotional",
                        #"{"accountId": "\#(account)", "offerId": "winback", "transactionId": "\#(flow.originalTransactionId)"}"#)
                    #expect(response.status == .ok)
                    let body = response.json
                    let nonce = try #require(body["nonce"] as? String)
                    let timestamp = try #require(body["timestamp"] as? Int64)
                    #expect(UUID(uuidString: nonce) != nil && nonce == nonce.lowercased())
                    #expect(timestamp >= before - 1000 && timestamp <= before + 60_000)
                    #expect(body["keyId"] as? String == "KEY123" && body["productId"] as? String == "pro.monthly")
                    #expect(body["appAccountToken"] as? String == account.uuidString.lowercased())

                    // Apple's documented payload: bundle id, key id, product, offer, appAccountToken, nonce, timestamp.
                    func payload(offer: String = "winback", token: String = account.uuidString.lowercased()) -> Data {
                        Data(
                            [StorekeeperHarness.bundleId, "KEY123", "pro.monthly", offer, token, nonce, String(timestamp)]
                                .joined(separator: "\u{2063}").utf8)
                    }
                    let encoded = try #require(body["signature"] as? String)
                    let der = try #require(Data(base64Encoded: encoded))
                    let signature = try P256.Signing.ECDSASignature(derRepresentation: der)
                    #expect(publicKey.isValidSignature(signature, for: payload()))
                    #expect(!publicKey.isValidSignature(signature, for: payload(offer: "stay")))
                    #expect(!publicKey.isValidSignature(signature, for: payload(token: UUID().uuidString.lowercased())))
                    #expect(!P256.Signing.PrivateKey().publicKey.isValidSignature(signature, for: payload()))

                    let compact = try #require(body["jws"] as? String)
                    let jws = try #require(Self.verifiedJWS(compact, key: publicKey))
                    #expect(
                        jws.header["alg"] as? String == "ES256" && jws.header["kid"] as? String == "KEY123" && jws.header["typ"] as? String == "JWT")
                    #expect(jws.claims["iss"] as? String == "issuer-1" && jws.claims["aud"] as? String == "promotional-offer")
                    #expect(jws.claims["bid"] as? String == StorekeeperHarness.bundleId && jws.claims["nonce"] as? String == nonce)
                    #expect(jws.claims["productId"] as? String == "pro.monthly" && jws.claims["offerIdentifier"] as? String == "winback")
                    #expect(jws.claims["transactionId"] as? String == flow.originalTransactionId)
                    #expect(abs((jws.claims["iat"] as? Int64 ?? 0) - before / 1000) < 60)

                    let again = try await client.withKey(.post, "/v1/offers/promotional", #"{"accountId": "\#(account)", "offerId": "winback"}"#)
                    #expect(again.status == .forbidden && (again.json["message"] as? String)?.contains("once per account") == true)
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
                    #expect(fresh.status == .ok && fresh.json["allowIntroductoryOffer"] as? Bool == true)
                    let freshJWS = try #require(fresh.json["jws"] as? String)
                    let claims = try #require(Self.verifiedJWS(freshJWS, key: apple.privateKey.publicKey)?.claims)
                    #expect(claims["aud"] as? String == "introductory-offer-eligibility" && claims["allowIntroductoryOffer"] as? Bool == true)
                    #expect(claims["productId"] as? String == "pro.monthly" && claims["transactionId"] as? String == "2000000001")
                    #expect(claims["iss"] as? String == "issuer-1" && claims["bid"] as? String == StorekeeperHarness.bundleId)
                    #expect(UUID(uuidString: claims["nonce"] as? String ?? "") != nil)

                    var flow = LifecycleFlow(harness: harness, client: client, account: account)
                    try await flow.send(.subscribe)
                    let used = try await eligibility("max.monthly")
                    #expect(used.status == .ok && used.json["allowIntroductoryOffer"] as? Bool == false)
                    let usedJWS = try #require(used.json["jws"] as? String)
                    let denied = try #require(Self.verifiedJWS(usedJWS, key: apple.privateKey.publicKey)?.claims)
                    #expect(denied["allowIntroductoryOffer"] as? Bool == false)

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
                #expect(response.status == .notFound && response.json["error"] as? String == "not_configured")
                #expect((response.json["message"] as? String)?.contains("STOREKEEPER_ASSA") == true)
            }
        }
    }
}
