import Crypto
import Foundation
import SwiftASN1
import X509

/// Signs payloads the way the App Store does: header `{"alg":"ES256","x5c":[leaf, intermediate, root]}` (standard
/// base64 DER), base64url segments without padding, and a raw 64-byte r‖s ES256 signature.
public struct JWSSigner: Sendable {
    private let encodedHeader: String
    private let key: P256.Signing.PrivateKey

    /// - Parameter x5c: the certificates to put in the header; defaults to the chain itself. Tests pass other lists.
    public init(chain: LocalSigningChain, x5c: [Certificate]? = nil) throws {
        let certificates = x5c ?? [chain.leaf, chain.intermediate, chain.root]
        let encoded = try certificates.map { certificate -> String in
            var serializer = DER.Serializer()
            try serializer.serialize(certificate)
            return Data(serializer.serializedBytes).base64EncodedString()
        }
        let header = try JSONSerialization.data(withJSONObject: ["alg": "ES256", "x5c": encoded], options: [.sortedKeys])
        self.encodedHeader = Self.base64URL(header)
        self.key = chain.leafKey
    }

    /// Signs the JSON encoding of `payload`.
    public func sign(_ payload: some Encodable) throws -> String {
        try sign(payloadBytes: JSONEncoder().encode(payload))
    }

    /// Signs raw payload bytes (tests use this for non-JSON payloads).
    public func sign(payloadBytes: Data) throws -> String {
        let signingInput = encodedHeader + "." + Self.base64URL(payloadBytes)
        let signature = try key.signature(for: Data(signingInput.utf8))
        return signingInput + "." + Self.base64URL(signature.rawRepresentation)
    }

    /// base64url without padding.
    public static func base64URL(_ data: Data) -> String {
        data.base64EncodedString()
            .replacingOccurrences(of: "+", with: "-")
            .replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }
}
