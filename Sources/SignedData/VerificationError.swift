/// Why a signed payload was not accepted. One error type for the whole verification module; the HTTP edge maps
/// ``Category`` to a status, nothing below it does.
public struct VerificationError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The class of failure, in the terms of Apple's libraries.
    public enum Category: String, Sendable, Equatable {
        /// Not a 3-part JWS, bad base64url, not JSON, `alg` not ES256, `x5c` missing or not 3 entries.
        case malformed
        /// An `x5c` entry that is not standard base64 or not a DER certificate.
        case certificate
        /// Chain to a configured root, Apple OIDs, validity, key type or signature failed.
        case untrusted
        /// Authentic, but for another bundle id, app id or environment.
        case identity
        /// Could not decide now (e.g. OCSP responder unreachable); the sender should retry.
        case retryable
    }

    public let category: Category
    /// A short human explanation. Never contains payload bytes or keys.
    public let reason: String

    public init(_ category: Category, _ reason: String) {
        self.category = category
        self.reason = reason
    }

    public var description: String { "\(category.rawValue): \(reason)" }

    static func malformed(_ reason: String) -> Self { .init(.malformed, reason) }
    static func certificate(_ reason: String) -> Self { .init(.certificate, reason) }
    static func untrusted(_ reason: String) -> Self { .init(.untrusted, reason) }
    static func identity(_ reason: String) -> Self { .init(.identity, reason) }
}
