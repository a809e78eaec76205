import Crypto
import Foundation
import PayloadDecoding
import _CryptoExtras

/// Where Google's signing keys are read from (`STOREKEEPER_GOOGLE_CERTS_URL`): the seam a test replaces.
public protocol GoogleKeySetSource: Sendable {
    /// The JWK set document; throws when it cannot be read now.
    func keySetDocument() async throws -> [UInt8]
}

/// Verifies the OIDC token Cloud Pub/Sub sends with an authenticated push (`Authorization: Bearer <JWT>`) before
/// anything else of the request is read: RS256 under the Google key its `kid` names, `iss` Google's, `aud` the
/// configured audience, `email` the configured push service account with `email_verified`, and `iat`/`exp` around
/// now within a small skew.
///
/// Keys are cached. An unknown `kid` (Google rotates keys about daily) fetches the set again, but at most once per
/// ``Settings/minimumRefetchInterval``, so a stranger sending made-up `kid`s cannot make every request a fetch.
public actor GooglePushVerifier {
    public struct Settings: Sendable {
        /// `STOREKEEPER_GOOGLE_PUSH_AUDIENCE`: the audience set on the push subscription.
        public var audience: String
        /// `STOREKEEPER_GOOGLE_PUSH_SERVICE_ACCOUNT`: the service account the subscription pushes as.
        public var serviceAccount: String
        /// How far `iat` may be ahead of this clock and `exp` behind it.
        public var clockSkew: TimeInterval = 60
        /// How long a fetched key set is used before it is read again (Google's answers allow a few hours).
        public var keyLifetime: TimeInterval = 3600
        /// The least time between two fetches, whatever asks for them.
        public var minimumRefetchInterval: TimeInterval = 30

        public init(audience: String, serviceAccount: String) {
            self.audience = audience
            self.serviceAccount = serviceAccount
        }
    }

    /// The issuers Google's ID tokens carry.
    static let issuers: Set<String> = ["accounts.google.com", "https://accounts.google.com"]
    /// A push token is about a kilobyte; far longer is not one.
    static let maximumTokenBytes = 8192

    public let settings: Settings
    private let source: any GoogleKeySetSource
    private var keys: [String: _RSA.Signing.PublicKey] = [:]
    private var fetchedAt: Date?
    private var lastAttempt: Date?
    private var fetching: Task<GoogleKeySet, any Error>?
    /// How many times the key set was read (a test and the metrics read it).
    public private(set) var fetches = 0

    public init(settings: Settings, source: any GoogleKeySetSource) {
        self.settings = settings
        self.source = source
    }

    /// Verifies an `Authorization` header's bearer token at `now`. `malformed`, `untrusted` and `identity` mean the
    /// push is refused (401); `retryable` means Google's keys could not be read and nothing was decided (503).
    public func verify(authorization: String?, now: Date) async throws(VerificationError) -> GooglePushIdentity {
        guard let authorization else { throw .malformed("no bearer token: the push subscription must have authentication enabled") }
        guard authorization.utf8.count <= Self.maximumTokenBytes + 7 else { throw .malformed("the bearer token is longer than 8 KiB") }
        let parts = authorization.split(separator: " ", maxSplits: 1, omittingEmptySubsequences: true)
        guard parts.count == 2, parts[0].lowercased() == "bearer" else { throw .malformed("Authorization must be Bearer <token>") }
        // RFC 6750 allows one or more spaces after the scheme.
        let jws = try CompactJWS(parsing: String(parts[1].drop { $0 == " " }))
        let header = try jws.header()
        guard header.alg == "RS256" else { throw .malformed("the token's alg must be RS256") }
        guard let kid = header.kid, !kid.isEmpty else { throw .malformed("the token names no key (kid)") }
        guard kid.utf8.count <= 256 else { throw .untrusted("no Google signing key has a kid that long") }
        let key = try await key(kid, now: now)
        let signature = _RSA.Signing.RSASignature(rawRepresentation: jws.signature)
        guard key.isValidSignature(signature, for: SHA256.hash(data: jws.signingInput), padding: .insecurePKCS1v1_5) else {
            throw .untrusted("the token's signature does not verify under Google's key \(kid)")
        }
        guard let claims = try? PayloadDecoder().decode(GooglePushClaims.self, from: jws.payload) else {
            throw .malformed("the token's claims are not a JSON object")
        }
        return try check(claims, now: now)
    }

    private func check(_ claims: GooglePushClaims, now: Date) throws(VerificationError) -> GooglePushIdentity {
        guard let issuer = claims.iss, Self.issuers.contains(issuer) else { throw .identity("the token was not issued by Google") }
        guard claims.aud.contains(settings.audience) else { throw .identity("the token's audience is not STOREKEEPER_GOOGLE_PUSH_AUDIENCE") }
        guard claims.email == settings.serviceAccount else {
            throw .identity("the token's email is not STOREKEEPER_GOOGLE_PUSH_SERVICE_ACCOUNT")
        }
        guard claims.emailVerified else { throw .identity("the token's email is not verified") }
        guard let iat = claims.iat, let exp = claims.exp, iat.isFinite, exp.isFinite, abs(iat) < 1e11, abs(exp) < 1e11 else {
            throw .identity("the token must carry iat and exp")
        }
        let issuedAt = Date(timeIntervalSince1970: iat)
        let expiresAt = Date(timeIntervalSince1970: exp)
        guard issuedAt <= now.addingTimeInterval(settings.clockSkew) else { throw .identity("the token is issued in the future") }
        guard expiresAt > now.addingTimeInterval(-settings.clockSkew) else { throw .identity("the token has expired") }
        guard expiresAt > issuedAt else { throw .identity("the token expires before it is issued") }
        return GooglePushIdentity(email: settings.serviceAccount, subject: claims.sub, issuedAt: issuedAt, expiresAt: expiresAt)
    }

    /// The key `kid` names: from the cache, else from a fetch when one is allowed now. Keys held, even past their
    /// lifetime, answer at once — a stale set is refreshed behind the request, so a slow or stalled fetch never holds
    /// up a push whose key is known; only an unknown `kid` waits for the fetch (which the source bounds in time).
    private func key(_ kid: String, now: Date) async throws(VerificationError) -> _RSA.Signing.PublicKey {
        let stale = fetchedAt.map { now.timeIntervalSince($0) >= settings.keyLifetime } ?? true
        let allowed = lastAttempt.map { now.timeIntervalSince($0) >= settings.minimumRefetchInterval || now < $0 } ?? true
        if let key = keys[kid] {
            if stale, allowed, fetching == nil { Task { try? await self.refresh(now: now) } }  // a failure is kept in lastFailure
            return key
        }
        if fetching != nil || allowed { try? await refresh(now: now) }
        guard let key = keys[kid] else {
            // Without any key nothing can be decided: the push is retried later, not refused.
            if keys.isEmpty { throw .init(.retryable, "Google's signing keys could not be read") }
            throw .untrusted("no Google signing key is named \(kid)")
        }
        return key
    }

    /// Why the last fetch of the key set failed, for the log; `nil` after a success.
    public private(set) var lastFailure: String?

    /// Reads the key set once for every caller waiting at the same time; each applies what it read.
    private func refresh(now: Date) async throws {
        if let fetching { return apply(try await fetching.value, now: now) }
        lastAttempt = now
        fetches += 1
        let source = self.source
        let task = Task { () throws -> GoogleKeySet in
            let set = try GoogleKeySet(jwks: try await source.keySetDocument())
            guard !set.keys.isEmpty else { throw VerificationError.malformed("Google's key set holds no RS256 key") }
            return set
        }
        fetching = task
        defer { fetching = nil }
        do {
            apply(try await task.value, now: now)
        } catch {
            lastFailure = "\(error)"
            throw error
        }
    }

    private func apply(_ set: GoogleKeySet, now: Date) {
        keys = set.keys
        fetchedAt = max(fetchedAt ?? now, now)
        lastFailure = nil
    }
}
