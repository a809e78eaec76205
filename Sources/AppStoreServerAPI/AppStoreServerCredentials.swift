import Crypto
import Foundation

/// What authenticates Storekeeper to the App Store Server API: the In-App Purchase key from App Store Connect
/// (issuer id, key id, the `.p8` EC P-256 private key) and the app's bundle id.
public struct AppStoreServerCredentials: Sendable {
    public var issuerId: String
    public var keyId: String
    public var privateKey: P256.Signing.PrivateKey
    public var bundleId: String

    public init(issuerId: String, keyId: String, privateKey: P256.Signing.PrivateKey, bundleId: String) {
        self.issuerId = issuerId
        self.keyId = keyId
        self.privateKey = privateKey
        self.bundleId = bundleId
    }

    /// Reads the `.p8` file (PEM, PKCS #8).
    public static func privateKey(p8 path: String) throws(AppStoreServerError) -> P256.Signing.PrivateKey {
        guard let text = try? String(contentsOfFile: path, encoding: .utf8) else {
            throw AppStoreServerError(.configuration, "cannot read the private key file \(path)")
        }
        do {
            return try P256.Signing.PrivateKey(pemRepresentation: text)
        } catch {
            throw AppStoreServerError(.configuration, "\(path) is not a PEM EC P-256 private key (.p8)")
        }
    }

    /// A fresh ES256 bearer token (`kid`, `typ`; `iss`, `iat`, `exp` = `iat` + 5 min, `aud`, `bid`), as Apple asks for
    /// one per request.
    public func bearerToken(now: Date) throws -> String {
        struct Claims: Encodable {
            let iss: String
            let iat: Int64
            let exp: Int64
            let aud = "appstoreconnect-v1"
            let bid: String
        }
        let issuedAt = Int64(now.timeIntervalSince1970)
        return try compactJWS(Claims(iss: issuerId, iat: issuedAt, exp: issuedAt + 300, bid: bundleId))
    }

    /// `claims` signed as a compact ES256 JWS with the header Apple asks for (`alg`, `kid`, `typ: JWT`).
    func compactJWS(_ claims: some Encodable) throws -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        let signingInput = "\(Self.base64URL(try encoder.encode(Header(kid: keyId)))).\(Self.base64URL(try encoder.encode(claims)))"
        let signature = try privateKey.signature(for: Data(signingInput.utf8))
        return "\(signingInput).\(Self.base64URL(signature.rawRepresentation))"
    }

    private struct Header: Encodable { let alg = "ES256", kid: String, typ = "JWT" }

    static func base64URL(_ data: Data) -> String {
        data.base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }
}
