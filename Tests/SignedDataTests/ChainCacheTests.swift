import AppStoreModels
import Foundation
import LocalSigning
import Testing
import X509

@testable import SignedData

@Suite("Verified-chain cache")
struct ChainCacheTests {
    @Test("a cached chain never accepts what an uncached check rejects")
    func cacheIsSound() async throws {
        let signedAt = Date(timeIntervalSince1970: Double(SignedFixture.signedDate) / 1000)
        // The leaf is valid for one day around signedDate only.
        let fixture = try SignedFixture(.init(leafValidity: signedAt.addingTimeInterval(-43_200)...signedAt.addingTimeInterval(43_200)))
        let cached = fixture.verifier()
        let uncached = SignedDataVerifier(
            rootCertificates: [fixture.chain.root],
            policy: VerificationPolicy(bundleId: SignedFixture.bundleId, appAppleId: nil, environments: [.sandbox]),
            cachesChains: false)

        var inside = fixture.transaction()
        _ = try await cached.verifyTransaction(try fixture.signer.sign(inside))  // now cached

        // Same chain, signedDate outside the leaf's validity: both must reject.
        for offset: Int64 in [-2 * 86_400_000, 2 * 86_400_000] {
            var outside = inside
            outside.signedDate = SignedFixture.signedDate + offset
            let text = try fixture.signer.sign(outside)
            await #expect(throws: VerificationError.self) { try await uncached.verifyTransaction(text) }
            await #expect(throws: VerificationError.self) { try await cached.verifyTransaction(text) }
        }
        // Same chain, a forged signature: both reject.
        inside.transactionId = "9999"
        let good = try fixture.signer.sign(inside)
        let parts = good.split(separator: ".").map(String.init)
        let other = try SignedFixture()
        let forged = try parts[0] + "." + parts[1] + "." + other.signer.sign(inside).split(separator: ".")[2]
        await #expect(throws: VerificationError.self) { try await cached.verifyTransaction(forged) }
        await #expect(throws: VerificationError.self) { try await uncached.verifyTransaction(forged) }
        // And both still accept the genuine one.
        _ = try await cached.verifyTransaction(good)
        _ = try await uncached.verifyTransaction(good)
    }

    @Test("a cached chain is not trusted by a verifier with other roots")
    func cacheIsPerVerifier() async throws {
        let fixture = try SignedFixture()
        let payload = try fixture.notification()
        _ = try await fixture.verifier().verifyNotification(payload)
        await #expect(throws: VerificationError.self) {
            try await fixture.verifier(roots: [try LocalRoot.make()]).verifyNotification(payload)
        }
    }
}

@Suite("Every notification shape")
struct NotificationShapeTests {
    @Test("summary: identity from the summary object")
    func summary() async throws {
        let fixture = try SignedFixture()
        let payload: [String: Any] = [
            "notificationType": "RENEWAL_EXTENSION", "subtype": "SUMMARY", "notificationUUID": UUID().uuidString,
            "signedDate": SignedFixture.signedDate, "version": "2.0",
            "summary": [
                "environment": "Sandbox", "appAppleId": 42, "bundleId": SignedFixture.bundleId, "productId": "pro.monthly",
                "requestIdentifier": "req-1", "storefrontCountryCodes": ["USA", "FRA"], "succeededCount": 10, "failedCount": 1,
            ],
        ]
        let verifier = fixture.verifier()
        let notification = try await verifier.verifyNotification(
            try fixture.signer.sign(payloadBytes: JSONSerialization.data(withJSONObject: payload)))
        #expect(notification.payload.summary?.succeededCount == 10)
        #expect(verifier.identityVerdict(for: notification) == .accepted)
    }

    @Test("externalPurchaseToken: the environment comes from the SANDBOX prefix")
    func externalPurchaseToken() async throws {
        let fixture = try SignedFixture()
        let verifier = fixture.verifier()
        for (id, accepted) in [("SANDBOX_123", true), ("123", false)] {
            let payload: [String: Any] = [
                "notificationType": "EXTERNAL_PURCHASE_TOKEN", "subtype": "UNREPORTED", "notificationUUID": UUID().uuidString,
                "signedDate": SignedFixture.signedDate,
                "externalPurchaseToken": [
                    "externalPurchaseId": id, "tokenCreationDate": SignedFixture.signedDate, "appAppleId": 42, "bundleId": SignedFixture.bundleId,
                ],
            ]
            let notification = try await verifier.verifyNotification(
                try fixture.signer.sign(payloadBytes: JSONSerialization.data(withJSONObject: payload)))
            #expect((verifier.identityVerdict(for: notification) == .accepted) == accepted, "\(id)")
        }
    }

    @Test("appData: the nested signed app transaction is verified too")
    func appData() async throws {
        let fixture = try SignedFixture()
        let verifier = fixture.verifier()
        let app = AppTransactionPayload(
            receiptType: .sandbox, appAppleId: 42, bundleId: SignedFixture.bundleId, receiptCreationDate: SignedFixture.signedDate)
        func envelope(_ signedApp: String) throws -> String {
            let payload: [String: Any] = [
                "notificationType": "RESCIND_CONSENT", "notificationUUID": UUID().uuidString, "signedDate": SignedFixture.signedDate,
                "appData": ["appAppleId": 42, "bundleId": SignedFixture.bundleId, "environment": "Sandbox", "signedAppTransactionInfo": signedApp],
            ]
            return try fixture.signer.sign(payloadBytes: JSONSerialization.data(withJSONObject: payload))
        }
        let notification = try await verifier.verifyNotification(try envelope(try fixture.signer.sign(app)))
        #expect(notification.appTransaction?.bundleId == SignedFixture.bundleId)
        #expect(verifier.identityVerdict(for: notification) == .accepted)
        let stranger = try SignedFixture()
        await #expect(throws: VerificationError.self) { try await verifier.verifyNotification(try envelope(try stranger.signer.sign(app))) }
    }

    @Test(
        "an envelope without data, summary, externalPurchaseToken or appData, or naming no bundleId or environment, is rejected as Apple's libraries do",
        arguments: [nil, ["environment": "Sandbox"], ["bundleId": SignedFixture.bundleId]] as [[String: String]?])
    func noIdentity(data: [String: String]?) async throws {
        let fixture = try SignedFixture()
        var payload: [String: Any] = ["notificationType": "TEST", "notificationUUID": UUID().uuidString, "signedDate": SignedFixture.signedDate]
        payload["data"] = data
        let verifier = fixture.verifier()
        let signed = try fixture.signer.sign(payloadBytes: JSONSerialization.data(withJSONObject: payload))
        do {
            _ = try await verifier.verifyNotification(signed)
            Issue.record("an envelope without its app's identity was accepted")
        } catch {
            #expect(error.category == .identity)
        }
    }
}

@Suite("Random mutations")
struct MutationPropertyTests {
    @Test("thousands of mutated JWS: never a crash, never accepted unless the decoded bytes are unchanged")
    func mutations() async throws {
        let fixture = try SignedFixture()
        let verifier = fixture.verifier()
        let original = try fixture.notification()
        let originalSegments = original.split(separator: ".", omittingEmptySubsequences: false).map { Base64URL.decode($0) }
        let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_.=+/ {}\"\\\u{0}é")
        var generator = SystemRandomNumberGenerator()
        var accepted = 0
        for round in 0..<3_000 {
            var characters = Array(original)
            for _ in 0..<Int.random(in: 1...3, using: &generator) {
                let position = Int.random(in: 0..<characters.count, using: &generator)
                switch Int.random(in: 0..<4, using: &generator) {
                case 0: characters[position] = alphabet.randomElement(using: &generator)!
                case 1: characters.remove(at: position)
                case 2: characters.insert(alphabet.randomElement(using: &generator)!, at: position)
                default: characters = Array(characters.prefix(position))
                }
                if characters.isEmpty { characters = ["."] }
            }
            let mutated = String(characters)
            do {
                _ = try await verifier.verifyNotification(mutated)
                let segments = mutated.split(separator: ".", omittingEmptySubsequences: false).map { Base64URL.decode($0) }
                #expect(segments == originalSegments, "round \(round) accepted changed bytes")
                accepted += 1
            } catch {
                // Rejected: the expected outcome for almost every mutation.
            }
        }
        #expect(accepted < 3_000)
    }
}
