import Crypto
import Foundation

/// Standard Webhooks signatures (https://www.standardwebhooks.com): `webhook-signature` is `v1,<base64 HMAC-SHA256>`
/// of `<webhook-id>.<webhook-timestamp>.<body>` under each secret, separated by spaces — two secrets at once while one
/// is rotated out.
public struct WebhookSignature: Sendable {
    /// A `whsec_<base64>` secret.
    public struct Secret: Sendable, Equatable, CustomStringConvertible {
        let key: SymmetricKey
        private let text: String

        /// Throws when `text` is not `whsec_` followed by base64 of at least 24 bytes.
        public init(_ text: String) throws(WebhookSignature.InvalidSecret) {
            guard text.hasPrefix("whsec_"), let data = Data(base64Encoded: String(text.dropFirst(6))), data.count >= 24, data.count <= 64
            else { throw InvalidSecret() }
            key = SymmetricKey(data: data)
            self.text = text
        }

        /// A new random secret of 32 bytes.
        public static func generate() -> Secret {
            let bytes = SymmetricKey(size: .bits256).withUnsafeBytes { Data($0) }
            return try! Secret("whsec_" + bytes.base64EncodedString())
        }

        public var description: String { "whsec_…" }
        public var encoded: String { text }

        public static func == (lhs: Secret, rhs: Secret) -> Bool { lhs.text == rhs.text }
    }

    public struct InvalidSecret: Error, Sendable {}

    public let secrets: [Secret]

    public init(secrets: [Secret]) { self.secrets = secrets }

    /// The `webhook-signature` header value.
    public func header(id: String, timestamp: Int64, body: some DataProtocol) -> String {
        secrets.map { "v1," + Self.sign(id: id, timestamp: timestamp, body: body, key: $0.key) }.joined(separator: " ")
    }

    /// Whether one of `header`'s `v1` signatures is valid under one of the secrets (what a receiver does).
    public func verify(header: String, id: String, timestamp: Int64, body: some DataProtocol) -> Bool {
        let offered = header.split(separator: " ").compactMap { part -> Data? in
            guard part.hasPrefix("v1,") else { return nil }
            return Data(base64Encoded: String(part.dropFirst(3)))
        }
        return secrets.contains { secret in
            var message = Data("\(id).\(timestamp).".utf8)
            message.append(contentsOf: body)
            return offered.contains { HMAC<SHA256>.isValidAuthenticationCode($0, authenticating: message, using: secret.key) }
        }
    }

    private static func sign(id: String, timestamp: Int64, body: some DataProtocol, key: SymmetricKey) -> String {
        var hmac = HMAC<SHA256>(key: key)
        hmac.update(data: Data("\(id).\(timestamp).".utf8))
        hmac.update(data: Data(body))
        return Data(hmac.finalize()).base64EncodedString()
    }
}
