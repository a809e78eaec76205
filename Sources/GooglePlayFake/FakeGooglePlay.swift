import Crypto
import Foundation
import GooglePlay
import LocalSigning
import Synchronization
import _CryptoExtras

/// Google, as far as the Play reference describes what a backend meets: the OIDC tokens Cloud Pub/Sub signs for an
/// authenticated push, the keys that verify them (as a JWK set and as PEM), and push bodies carrying a Play
/// DeveloperNotification. Served over HTTP by ``router()``; a test or `storekeeper dev` points
/// `STOREKEEPER_GOOGLE_CERTS_URL` at it.
public final class FakeGooglePlay: Sendable {
    /// Google's issuer, as its tokens write it.
    public static let issuer = "https://accounts.google.com"

    /// A signing key and the `kid` it is published under.
    public struct SigningKey: Sendable {
        public let kid: String
        let key: _RSA.Signing.PrivateKey

        init(kid: String) throws {
            self.kid = kid
            self.key = try _RSA.Signing.PrivateKey(keySize: .bits2048)
        }

        /// The key as one entry of a JWK set.
        var jwk: [String: String] {
            let primitives = (try? key.publicKey.getKeyPrimitives()) ?? .init(modulus: Data(), publicExponent: Data())
            return [
                "kty": "RSA", "alg": "RS256", "use": "sig", "kid": kid,
                "n": JWSSigner.base64URL(primitives.modulus), "e": JWSSigner.base64URL(primitives.publicExponent),
            ]
        }
    }

    struct State {
        /// Published keys, newest first; the first signs.
        var keys: [SigningKey]
        /// Requests for the key set, by either form.
        var certificateReads = 0
        var nextMessage = 1_000_000_000_000
        var nextToken = 0
        var nextOrder = 1000
        var subscriptions: [String: SubscriptionToken] = [:]
        var products: [String: ProductToken] = [:]
        /// `voidedpurchases.list`'s entries, oldest first.
        var voided: [VoidedEntry] = []
        /// Chargebacks waiting for a review: order id → `pendingRefundToken`.
        var pendingReviews: [String: String] = [:]
        /// `orders.reviewrefund` bodies received (JSON), with their order id.
        var reviews: [Data] = []
        /// `acknowledge` calls per token.
        var acknowledgements: [String: Int] = [:]
        /// Access tokens granted to the service account.
        var accessTokens: Set<String> = []
        var grants = 0
        /// Statuses the API answers next, before serving normally again (429, 503, …).
        var failures: [Int] = []
        /// API requests served (token grants and certificates apart).
        var apiRequests = 0
    }

    let state: Mutex<State>
    /// The app whose purchases the fake sells.
    public let packageName: String
    /// The service account the Play Developer API answers.
    public let serviceAccountEmail = "storekeeper@fake-play.iam.gserviceaccount.com"
    let serviceAccountKey: _RSA.Signing.PrivateKey
    /// This fake's own part of every purchase token, order id and message id: tokens, orders and messages of an
    /// earlier fake (a `dev --fake-play` restarted on the same database) are never sold or sent again.
    let runNumber: Int
    var runId: String { String(runNumber, radix: 36) }
    /// Whether its purchases are a license tester's, as a developer's own purchases are (`testPurchase` /
    /// `testPurchaseContext`): Storekeeper files them as sandbox, as it does `simulate`'s App Store purchases.
    let testPurchases: Bool

    /// A fake with one published key, selling `packageName`'s products (a license tester's when `testPurchases`).
    public init(packageName: String = "com.example.storekeeper", testPurchases: Bool = false) throws {
        self.testPurchases = testPurchases
        let run = Int.random(in: 0..<1_000_000)
        var first = State(keys: [try SigningKey(kid: "fake-google-1")])
        first.nextMessage = 1_000_000_000_000 + run * 1_000_000
        state = Mutex(first)
        runNumber = run
        self.packageName = packageName
        serviceAccountKey = try _RSA.Signing.PrivateKey(keySize: .bits2048)
    }

    /// A service-account key file as Google Cloud gives one, whose `token_uri` is `tokenURI` (the fake's `/token`).
    public func serviceAccountKeyFile(tokenURI: String) -> [UInt8] {
        let file: [String: String] = [
            "type": "service_account", "project_id": "fake-play", "private_key_id": "fake-key-1",
            "private_key": serviceAccountKey.pkcs8PEMRepresentation, "client_email": serviceAccountEmail, "client_id": "1000000000001",
            "auth_uri": "https://accounts.google.com/o/oauth2/auth", "token_uri": tokenURI,
        ]
        return Array((try? JSONSerialization.data(withJSONObject: file, options: [.sortedKeys, .withoutEscapingSlashes])) ?? Data())
    }

    /// Access tokens granted so far.
    public var grants: Int { state.withLock { $0.grants } }
    /// Play Developer API requests served so far.
    public var apiRequests: Int { state.withLock { $0.apiRequests } }

    /// Forgets every access token granted (as when Google revokes them): the next API request with one is 401.
    public func revokeAccessTokens() { state.withLock { $0.accessTokens.removeAll() } }

    /// The API answers `statuses` to its next requests, in order, then serves normally again.
    public func failNext(_ statuses: [Int]) { state.withLock { $0.failures += statuses } }

    /// Publishes a new key and signs with it from now on; the previous key stays published (as Google's rotation
    /// keeps two) unless `retiring` says otherwise.
    public func rotateKey(retiring: Bool = false) throws {
        let count = state.withLock { $0.keys.count }
        let key = try SigningKey(kid: "fake-google-\(count + 1)")
        state.withLock { state in
            state.keys.insert(key, at: 0)
            if retiring { state.keys.removeLast(state.keys.count - 1) }
        }
    }

    /// The `kid` tokens are signed under now.
    public var currentKeyIdentifier: String { state.withLock { $0.keys[0].kid } }

    /// How many times the certificates were read.
    public var certificateReads: Int { state.withLock { $0.certificateReads } }

    /// The claims of a push token, Google's example by default.
    public struct PushClaims: Sendable {
        public var audience: String
        public var email: String
        public var emailVerified: Bool = true
        public var issuer: String = FakeGooglePlay.issuer
        public var issuedAt: Date
        public var lifetime: TimeInterval = 3600

        public init(audience: String, email: String, issuedAt: Date = Date()) {
            self.audience = audience
            self.email = email
            self.issuedAt = issuedAt
        }
    }

    /// A push token as Pub/Sub signs it (RS256 under the current key, `typ: JWT`), or under `key` when given.
    public func pushToken(_ claims: PushClaims, key: SigningKey? = nil, header: [String: String]? = nil) throws -> String {
        let signingKey = key ?? state.withLock { $0.keys[0] }
        let header = header ?? ["alg": "RS256", "kid": signingKey.kid, "typ": "JWT"]
        let iat = Int64(claims.issuedAt.timeIntervalSince1970)
        let payload: [String: Any] = [
            "aud": claims.audience, "azp": "1134567890", "email": claims.email, "email_verified": claims.emailVerified,
            "iat": iat, "exp": iat + Int64(claims.lifetime), "iss": claims.issuer, "sub": "1134567890",
        ]
        let input =
            try JWSSigner.base64URL(JSONSerialization.data(withJSONObject: header, options: .sortedKeys)) + "."
            + JWSSigner.base64URL(JSONSerialization.data(withJSONObject: payload, options: .sortedKeys))
        let signature = try signingKey.key.signature(for: SHA256.hash(data: Data(input.utf8)), padding: .insecurePKCS1v1_5)
        return input + "." + JWSSigner.base64URL(signature.rawRepresentation)
    }

    /// A key that is not published (a stranger's), under the current key's `kid` unless another is given.
    public func strangerKey(kid: String? = nil) throws -> SigningKey {
        try SigningKey(kid: kid ?? currentKeyIdentifier)
    }

    /// The JWK set document (`/oauth2/v3/certs`).
    public func keySetDocument() -> [UInt8] {
        let keys = state.withLock { state in
            state.certificateReads += 1
            return state.keys.map(\.jwk)
        }
        return Array((try? JSONSerialization.data(withJSONObject: ["keys": keys], options: .sortedKeys)) ?? Data())
    }

    /// The keys as `{kid: PEM}` (`/oauth2/v1/certs`, the form google-auth reads by default). Google serves X.509
    /// certificates there; the fake serves the bare public key, which google-auth reads the same way.
    public func pemDocument() -> [UInt8] {
        let keys = state.withLock { state in
            state.certificateReads += 1
            return Dictionary(uniqueKeysWithValues: state.keys.map { ($0.kid, $0.key.publicKey.pemRepresentation) })
        }
        return Array((try? JSONSerialization.data(withJSONObject: keys, options: .sortedKeys)) ?? Data())
    }

    /// A wrapped Pub/Sub push body carrying `notification` (a DeveloperNotification as JSON), with a fresh message id
    /// unless one is given.
    public func pushBody(_ notification: [String: Any], messageId: String? = nil, subscription: String = "projects/storekeeper/subscriptions/play")
        -> (messageId: String, body: [UInt8])
    {
        let id =
            messageId
            ?? state.withLock { state in
                state.nextMessage += 1
                return String(state.nextMessage)
            }
        let data = (try? JSONSerialization.data(withJSONObject: notification, options: .sortedKeys)) ?? Data()
        let body: [String: Any] = [
            "message": [
                "attributes": [:] as [String: String], "data": data.base64EncodedString(), "messageId": id, "message_id": id,
                "publishTime": "2026-11-28T10:00:00.123Z", "publish_time": "2026-11-28T10:00:00.123Z",
            ] as [String: Any],
            "subscription": subscription,
        ]
        return (id, Array((try? JSONSerialization.data(withJSONObject: body, options: .sortedKeys)) ?? Data()))
    }

    /// A DeveloperNotification about a subscription token, as the RTDN reference shows one.
    public static func subscriptionNotification(packageName: String, type: Int, purchaseToken: String, at date: Date = Date()) -> [String: Any] {
        [
            "version": "1.0", "packageName": packageName, "eventTimeMillis": String(Int64(date.timeIntervalSince1970 * 1000)),
            "subscriptionNotification": ["version": "1.0", "notificationType": type, "purchaseToken": purchaseToken] as [String: Any],
        ]
    }

    /// Play Console's test notification.
    public static func testNotification(packageName: String, at date: Date = Date()) -> [String: Any] {
        [
            "version": "1.0", "packageName": packageName, "eventTimeMillis": String(Int64(date.timeIntervalSince1970 * 1000)),
            "testNotification": ["version": "1.0"],
        ]
    }
}
