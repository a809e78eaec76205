import Foundation
import PayloadDecoding
import _CryptoExtras

/// Google's signing keys as a JWK set (`https://www.googleapis.com/oauth2/v3/certs`): RSA keys by `kid`. Keys of
/// another type or algorithm, or shorter than 2,048 bits, are left out rather than refusing the set.
public struct GoogleKeySet: Sendable {
    public let keys: [String: _RSA.Signing.PublicKey]

    public init(keys: [String: _RSA.Signing.PublicKey]) { self.keys = keys }

    /// Reads a JWK set document; a document that is not one is `malformed`.
    public init(jwks: some DataProtocol) throws(VerificationError) {
        let document: Document
        do {
            document = try PayloadDecoder().decode(Document.self, from: jwks)
        } catch {
            throw .malformed("Google's certificates are not a JWK set")
        }
        var keys: [String: _RSA.Signing.PublicKey] = [:]
        for key in document.keys where key.kty == "RSA" && (key.alg ?? "RS256") == "RS256" && (key.use ?? "sig") == "sig" {
            guard let kid = key.kid, let n = key.n.flatMap(Self.base64URL), let e = key.e.flatMap(Self.base64URL),
                let publicKey = try? _RSA.Signing.PublicKey(n: n, e: e), publicKey.keySizeInBits >= 2048
            else { continue }
            keys[kid] = publicKey
        }
        self.keys = keys
    }

    static func base64URL(_ text: String) -> Data? {
        Base64URL.decode(Data(text.utf8))
    }

    private struct Document: Decodable {
        var keys: [Key]
    }

    private struct Key: Decodable {
        var kty: String?
        var alg: String?
        var use: String?
        var kid: String?
        var n: String?
        var e: String?
    }
}
