import Crypto
import Foundation

/// Signs what StoreKit needs to redeem offers, with the In-App Purchase key (`STOREKEEPER_ASSA_*`) the app must not
/// hold: the original promotional-offer signature, and the JWS forms newer StoreKit takes (promotional offer,
/// introductory-offer eligibility).
public struct OfferSigner: Sendable {
    let credentials: AppStoreServerCredentials

    public init(credentials: AppStoreServerCredentials) { self.credentials = credentials }

    /// The key id StoreKit is told the signature was made with.
    public var keyId: String { credentials.keyId }

    /// The original promotional-offer signature ("Generating a signature for promotional offers"): ECDSA P-256 with
    /// SHA-256 over `bundleId ⁣ keyId ⁣ productId ⁣ offerId ⁣ appAccountToken ⁣ nonce ⁣ timestamp` joined by U+2063
    /// (invisible separator), the token and nonce lowercased, the timestamp in milliseconds; base64 of the DER
    /// signature.
    public func promotionalSignature(
        productId: String, offerId: String, appAccountToken: String, nonce: UUID, timestamp: Int64
    ) throws -> String {
        let payload = Self.promotionalPayload(
            bundleId: credentials.bundleId, keyId: credentials.keyId, productId: productId, offerId: offerId,
            appAccountToken: appAccountToken, nonce: nonce, timestamp: timestamp)
        return try credentials.privateKey.signature(for: Data(payload.utf8)).derRepresentation.base64EncodedString()
    }

    /// The string the original promotional-offer signature signs.
    public static func promotionalPayload(
        bundleId: String, keyId: String, productId: String, offerId: String, appAccountToken: String, nonce: UUID, timestamp: Int64
    ) -> String {
        [bundleId, keyId, productId, offerId, appAccountToken.lowercased(), nonce.uuidString.lowercased(), String(timestamp)]
            .joined(separator: "\u{2063}")
    }

    /// The promotional-offer JWS ("Generating JWS to sign App Store requests"): `aud` `promotional-offer`.
    public func promotionalJWS(productId: String, offerId: String, transactionId: String?, nonce: UUID, issuedAt: Date) throws -> String {
        struct Claims: Encodable {
            let iss: String, iat: Int64, aud = "promotional-offer", bid: String, nonce: String
            let productId: String, offerIdentifier: String, transactionId: String?
        }
        return try credentials.compactJWS(
            Claims(
                iss: credentials.issuerId, iat: Int64(issuedAt.timeIntervalSince1970), bid: credentials.bundleId,
                nonce: nonce.uuidString.lowercased(), productId: productId, offerIdentifier: offerId, transactionId: transactionId))
    }

    /// The introductory-offer eligibility JWS: `aud` `introductory-offer-eligibility`, with the decision.
    public func introductoryEligibilityJWS(
        productId: String, allowIntroductoryOffer: Bool, transactionId: String, nonce: UUID, issuedAt: Date
    ) throws -> String {
        struct Claims: Encodable {
            let iss: String, iat: Int64, aud = "introductory-offer-eligibility", bid: String, nonce: String
            let productId: String, allowIntroductoryOffer: Bool, transactionId: String
        }
        return try credentials.compactJWS(
            Claims(
                iss: credentials.issuerId, iat: Int64(issuedAt.timeIntervalSince1970), bid: credentials.bundleId,
                nonce: nonce.uuidString.lowercased(), productId: productId, allowIntroductoryOffer: allowIntroductoryOffer,
                transactionId: transactionId))
    }
}
