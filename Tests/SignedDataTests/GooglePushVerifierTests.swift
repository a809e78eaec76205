import Foundation
import GooglePlayFake
import SignedData
import Synchronization
import Testing

/// The push token check, against tokens and keys made the way Pub/Sub and Google make them (``FakeGooglePlay``):
/// every claim the Pub/Sub documentation says to check, each wrong in turn, refuses the push; Google's key rotation
/// is followed; a stranger's made-up key ids cannot turn every request into a fetch.
@Suite("Google push token verification")
struct GooglePushVerifierTests {
    static let audience = "https://storekeeper.example.com/notifications/google"
    static let account = "play-push@storekeeper-demo.iam.gserviceaccount.com"
    static let now = Date(timeIntervalSince1970: 1_795_000_000)

    /// The fake's JWK set, read in-process; fails while `failing` is set.
    final class Source: GoogleKeySetSource, Sendable {
        let fake: FakeGooglePlay
        let failing = Mutex(false)
        /// Each read waits this long first (a slow or stalled certificates host).
        let delay = Mutex(Duration.zero)
        init(_ fake: FakeGooglePlay) { self.fake = fake }
        func keySetDocument() async throws -> [UInt8] {
            struct Unreachable: Error {}
            try await Task.sleep(for: delay.withLock { $0 })
            if failing.withLock({ $0 }) { throw Unreachable() }
            return fake.keySetDocument()
        }
    }

    func verifier(_ fake: FakeGooglePlay) -> (GooglePushVerifier, Source) {
        let source = Source(fake)
        return (GooglePushVerifier(settings: .init(audience: Self.audience, serviceAccount: Self.account), source: source), source)
    }

    func claims(at date: Date = now) -> FakeGooglePlay.PushClaims {
        FakeGooglePlay.PushClaims(audience: Self.audience, email: Self.account, issuedAt: date)
    }

    @Test("a token as Pub/Sub signs it passes, with `Bearer` in any case; the key set is read once")
    func genuine() async throws {
        let fake = try FakeGooglePlay()
        let (verifier, _) = verifier(fake)
        let token = try fake.pushToken(claims())
        let identity = try await verifier.verify(authorization: "Bearer \(token)", now: Self.now.addingTimeInterval(120))
        #expect(identity.email == Self.account && identity.expiresAt == Self.now.addingTimeInterval(3600))
        _ = try await verifier.verify(authorization: "bearer \(token)", now: Self.now)
        #expect(await verifier.fetches == 1)
    }

    @Test("each claim or part wrong in turn is refused, as malformed, untrusted or the wrong identity")
    func refusals() async throws {
        let fake = try FakeGooglePlay()
        let (verifier, _) = verifier(fake)
        var otherAudience = claims()
        otherAudience.audience = "https://attacker.example/push"
        var otherAccount = claims()
        otherAccount.email = "someone@other-project.iam.gserviceaccount.com"
        var unverified = claims()
        unverified.emailVerified = false
        var otherIssuer = claims()
        otherIssuer.issuer = "https://accounts.example.com"
        var reversed = claims()
        reversed.lifetime = -10
        let genuine = try fake.pushToken(claims())
        let parts = genuine.split(separator: ".").map(String.init)
        let forgedPayload =
            parts[0] + "."
            + Data(
                #"{"aud":"\#(Self.audience)","email":"\#(Self.account)","email_verified":true,"iat":1795000000,"exp":1795003600,"iss":"https://accounts.google.com"}"#
                    .utf8
            ).base64EncodedString()
            .replacingOccurrences(of: "=", with: "") + "." + parts[2]
        let cases: [(String, String?, VerificationError.Category)] = [
            ("no header", nil, .malformed),
            ("Basic scheme", "Basic \(genuine)", .malformed),
            ("two segments", "Bearer \(parts[0]).\(parts[1])", .malformed),
            ("not base64", "Bearer ***.***.***", .malformed),
            ("alg none", "Bearer " + (try fake.pushToken(claims(), header: ["alg": "none", "kid": fake.currentKeyIdentifier])), .malformed),
            ("alg HS256", "Bearer " + (try fake.pushToken(claims(), header: ["alg": "HS256", "kid": fake.currentKeyIdentifier])), .malformed),
            ("no kid", "Bearer " + (try fake.pushToken(claims(), header: ["alg": "RS256"])), .malformed),
            ("unpublished kid", "Bearer " + (try fake.pushToken(claims(), key: try fake.strangerKey(kid: "made-up"))), .untrusted),
            ("a stranger's key under Google's kid", "Bearer " + (try fake.pushToken(claims(), key: try fake.strangerKey())), .untrusted),
            ("payload changed after signing", "Bearer \(forgedPayload)", .untrusted),
            ("another audience", "Bearer " + (try fake.pushToken(otherAudience)), .identity),
            ("another service account", "Bearer " + (try fake.pushToken(otherAccount)), .identity),
            ("email not verified", "Bearer " + (try fake.pushToken(unverified)), .identity),
            ("another issuer", "Bearer " + (try fake.pushToken(otherIssuer)), .identity),
            ("expired two minutes ago", "Bearer " + (try fake.pushToken(claims(at: Self.now.addingTimeInterval(-3720)))), .identity),
            ("issued two minutes ahead", "Bearer " + (try fake.pushToken(claims(at: Self.now.addingTimeInterval(120)))), .identity),
            ("expires before issued", "Bearer " + (try fake.pushToken(reversed)), .identity),
            ("oversized", "Bearer " + String(repeating: "a", count: 9000), .malformed),
        ]
        for (label, header, expected) in cases {
            do {
                _ = try await verifier.verify(authorization: header, now: Self.now)
                Issue.record("\(label): accepted")
            } catch {
                #expect(error.category == expected, "\(label): \(error)")
            }
        }
        // Within the skew both ways still passes.
        _ = try await verifier.verify(
            authorization: "Bearer " + (try fake.pushToken(claims(at: Self.now.addingTimeInterval(-3600 + 30)))), now: Self.now)
        _ = try await verifier.verify(authorization: "Bearer " + (try fake.pushToken(claims(at: Self.now.addingTimeInterval(30)))), now: Self.now)
    }

    @Test("a rotated key is fetched when a token names it; made-up kids fetch at most once per interval")
    func rotationAndFetchBound() async throws {
        let fake = try FakeGooglePlay()
        let (verifier, _) = verifier(fake)
        _ = try await verifier.verify(authorization: "Bearer " + (try fake.pushToken(claims())), now: Self.now)
        try fake.rotateKey()
        // The new kid is unknown to the cache: one fetch, 31 s after the first.
        let later = Self.now.addingTimeInterval(31)
        _ = try await verifier.verify(authorization: "Bearer " + (try fake.pushToken(claims())), now: later)
        #expect(await verifier.fetches == 2)
        let stranger = try fake.strangerKey()
        for index in 0..<50 {
            let made = try fake.pushToken(claims(), key: stranger, header: ["alg": "RS256", "kid": "made-up-\(index)", "typ": "JWT"])
            await #expect(throws: VerificationError.self) {
                try await verifier.verify(authorization: "Bearer \(made)", now: later.addingTimeInterval(Double(index) / 10))
            }
        }
        #expect(await verifier.fetches == 2, "fifty unknown kids within the interval fetched nothing more")
        let made = try fake.pushToken(claims(), key: try fake.strangerKey(kid: "made-up-late"))
        await #expect(throws: VerificationError.self) {
            try await verifier.verify(authorization: "Bearer \(made)", now: later.addingTimeInterval(31))
        }
        #expect(await verifier.fetches == 3, "after the interval one more fetch is allowed")
    }

    @Test("Google's keys unreachable: retryable without keys, decided with the keys held")
    func unreachable() async throws {
        let fake = try FakeGooglePlay()
        let (verifier, source) = verifier(fake)
        source.failing.withLock { $0 = true }
        let token = "Bearer " + (try fake.pushToken(claims()))
        do {
            _ = try await verifier.verify(authorization: token, now: Self.now)
            Issue.record("verified without keys")
        } catch {
            #expect(error.category == .retryable)
        }
        // Still without keys and within the fetch interval: retryable again, never a refusal.
        do {
            _ = try await verifier.verify(authorization: token, now: Self.now.addingTimeInterval(1))
            Issue.record("verified without keys")
        } catch {
            #expect(error.category == .retryable)
        }
        #expect(await verifier.fetches == 1, "the interval held")
        source.failing.withLock { $0 = false }
        _ = try await verifier.verify(authorization: token, now: Self.now.addingTimeInterval(31))
        // Past the keys' lifetime, with the host stalled for a minute: a known key still answers at once, the
        // refresh runs behind it.
        source.delay.withLock { $0 = .seconds(60) }
        let stale = Self.now.addingTimeInterval(31 + 3700)
        let started = ContinuousClock.now
        _ = try await verifier.verify(authorization: "Bearer " + (try fake.pushToken(claims(at: stale))), now: stale)
        #expect(ContinuousClock.now - started < .seconds(5), "answered without waiting for the stalled refresh")
    }
}
