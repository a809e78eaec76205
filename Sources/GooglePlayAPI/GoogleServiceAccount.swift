import Crypto
import Foundation
import _CryptoExtras

/// A Google service-account key file (`STOREKEEPER_GOOGLE_SERVICE_ACCOUNT`): the JSON Google Cloud gives for a key,
/// of which the email, the RSA private key, its id and the token endpoint are used.
public struct GoogleServiceAccount: Sendable {
    public let email: String
    public let keyIdentifier: String?
    public let privateKey: _RSA.Signing.PrivateKey
    /// Where the JWT-bearer grant is posted (`https://oauth2.googleapis.com/token` in Google's files).
    public let tokenURI: String

    // swift-format-ignore: AlwaysUseLowerCamelCase
    // The key file's own field names, as Google Cloud writes them.
    struct File: Decodable {
        var type: String?
        var client_email: String?
        var private_key: String?
        var private_key_id: String?
        var token_uri: String?
    }

    /// Reads a key file's contents; a problem is one line naming what is wrong (never the key).
    public init(json: some DataProtocol) throws(GooglePlayAPIError) {
        guard let file = try? JSONDecoder().decode(File.self, from: Data(json)) else {
            throw GooglePlayAPIError(.refused, "the service-account key file is not JSON")
        }
        guard file.type == "service_account" else { throw GooglePlayAPIError(.refused, #"the key file's type must be "service_account""#) }
        guard let email = file.client_email, email.contains("@") else { throw GooglePlayAPIError(.refused, "the key file has no client_email") }
        guard let pem = file.private_key, let key = try? _RSA.Signing.PrivateKey(pemRepresentation: pem) else {
            throw GooglePlayAPIError(.refused, "the key file's private_key is not an RSA key in PEM")
        }
        guard let tokenURI = file.token_uri, let url = URL(string: tokenURI), ["http", "https"].contains(url.scheme ?? ""), url.host != nil else {
            throw GooglePlayAPIError(.refused, "the key file's token_uri is not an http(s) URL")
        }
        self.email = email
        self.keyIdentifier = file.private_key_id
        self.privateKey = key
        self.tokenURI = tokenURI
    }

    /// The signed assertion of the JWT-bearer grant (Google's "Using OAuth 2.0 for Server to Server Applications"):
    /// RS256, `iss` the account, `scope`, `aud` the token endpoint, valid an hour from `now`.
    public func assertion(scope: String, now: Date) throws -> String {
        var header: [String: String] = ["alg": "RS256", "typ": "JWT"]
        if let keyIdentifier { header["kid"] = keyIdentifier }
        let iat = Int64(now.timeIntervalSince1970)
        let claims: [String: Any] = ["iss": email, "scope": scope, "aud": tokenURI, "iat": iat, "exp": iat + 3600]
        let input =
            Self.base64URL(try JSONSerialization.data(withJSONObject: header, options: .sortedKeys)) + "."
            + Self.base64URL(try JSONSerialization.data(withJSONObject: claims, options: .sortedKeys))
        let signature = try privateKey.signature(for: SHA256.hash(data: Data(input.utf8)), padding: .insecurePKCS1v1_5)
        return input + "." + Self.base64URL(signature.rawRepresentation)
    }

    static func base64URL(_ data: Data) -> String {
        data.base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }
}
