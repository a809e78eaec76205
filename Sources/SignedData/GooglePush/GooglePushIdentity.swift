import Foundation
import PayloadDecoding

/// Who sent a Pub/Sub push, as its verified OIDC token says: the push subscription's service account.
public struct GooglePushIdentity: Sendable, Equatable {
    public var email: String
    public var subject: String?
    public var issuedAt: Date
    public var expiresAt: Date
}

/// The claims of a Pub/Sub push token (Pub/Sub "Authenticate push subscriptions"): `iss`, `aud`, `email`,
/// `email_verified`, `iat`, `exp`, `sub`. `aud` is a string in Google's tokens; a list is read too (RFC 7519).
struct GooglePushClaims: Decodable {
    var iss: String?
    var aud: [String]
    var email: String?
    var emailVerified: Bool
    var iat: Double?
    var exp: Double?
    var sub: String?

    enum CodingKeys: String, CodingKey {
        case iss, aud, email, iat, exp, sub
        case emailVerified = "email_verified"
    }

    init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        iss = try? container.decodeIfPresent(String.self, forKey: .iss)
        if let one = try? container.decodeIfPresent(String.self, forKey: .aud) {
            aud = [one]
        } else {
            aud = (try? container.decodeIfPresent([String].self, forKey: .aud)) ?? []
        }
        email = try? container.decodeIfPresent(String.self, forKey: .email)
        // Older Google tokens wrote the flag as the string "true".
        emailVerified =
            (try? container.decodeIfPresent(Bool.self, forKey: .emailVerified)) == true
            || (try? container.decodeIfPresent(String.self, forKey: .emailVerified)) == "true"
        iat = try? container.decodeIfPresent(Double.self, forKey: .iat)
        exp = try? container.decodeIfPresent(Double.self, forKey: .exp)
        sub = try? container.decodeIfPresent(String.self, forKey: .sub)
    }
}
