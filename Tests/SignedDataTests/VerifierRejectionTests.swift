import AppStoreModels
import Crypto
import Foundation
import LocalSigning
import SwiftASN1
import Testing
import X509

@testable import SignedData

@Suite("Verifier: what must be rejected")
struct VerifierRejectionTests {
    private func category(_ body: () async throws -> some Any) async -> VerificationError.Category? {
        do {
            _ = try await body()
            return nil
        } catch let error as VerificationError {
            return error.category
        } catch {
            return nil
        }
    }

    @Test("a well-formed Apple-shaped notification verifies, nested transaction included")
    func acceptsGoodChain() async throws {
        let fixture = try SignedFixture()
        let notification = try await fixture.verifier().verifyNotification(try fixture.notification())
        #expect(notification.transaction?.originalTransactionId == "1000")
        #expect(fixture.verifier().identityVerdict(for: notification) == .accepted)
    }

    @Test("a chain to a root that is not configured")
    func untrustedRoot() async throws {
        let fixture = try SignedFixture()
        let other = try SignedFixture()
        #expect(await category { try await fixture.verifier(roots: [other.chain.root]).verifyNotification(try fixture.notification()) } == .untrusted)
    }

    @Test("x5c[2] swapped for an attacker root changes nothing")
    func attackerRootInHeader() async throws {
        let trusted = try SignedFixture()
        // The attacker's own chain, with its own root in x5c[2]: still rejected by the trusted verifier.
        let attacker = try SignedFixture()
        #expect(await category { try await trusted.verifier().verifyNotification(try attacker.notification()) } == .untrusted)
        // A genuine chain whose x5c[2] is replaced by an attacker root: still accepted (x5c[2] is never used).
        let swapped = try SignedFixture(x5c: { [$0.leaf, $0.intermediate, attacker.chain.root] })
        _ = try await swapped.verifier().verifyNotification(try swapped.notification())
    }

    @Test("missing or wrong Apple marker OIDs")
    func markerOIDs() async throws {
        for options in [
            LocalSigningChain.Options(intermediateMarker: nil),
            LocalSigningChain.Options(leafMarker: nil),
            LocalSigningChain.Options(intermediateMarker: [1, 2, 840, 113635, 100, 6, 2, 2]),
            LocalSigningChain.Options(leafMarker: [1, 2, 840, 113635, 100, 6, 11, 2]),
        ] {
            let fixture = try SignedFixture(options)
            #expect(await category { try await fixture.verifier().verifyNotification(try fixture.notification()) } == .untrusted)
        }
    }

    @Test("a leaf expired or not yet valid at signedDate")
    func leafValidity() async throws {
        let signed = Date(timeIntervalSince1970: Double(SignedFixture.signedDate) / 1000)
        for window in [
            signed.addingTimeInterval(-86_400 * 10)...signed.addingTimeInterval(-86_400),
            signed.addingTimeInterval(3600)...signed.addingTimeInterval(86_400),
        ] {
            let fixture = try SignedFixture(.init(leafValidity: window))
            #expect(await category { try await fixture.verifier().verifyNotification(try fixture.notification()) } == .untrusted)
        }
    }

    @Test("offline validates at signedDate, online at now")
    func validationTime() async throws {
        let signed = Date(timeIntervalSince1970: Double(SignedFixture.signedDate) / 1000)
        // Valid around signedDate only.
        let fixture = try SignedFixture(.init(leafValidity: signed.addingTimeInterval(-3600)...signed.addingTimeInterval(3600)))
        let payload = try fixture.notification()
        _ = try await fixture.verifier(validationTime: .signedDate).verifyNotification(payload)
        let later = signed.addingTimeInterval(86_400)
        #expect(await category { try await fixture.verifier(validationTime: .now, now: later).verifyNotification(payload) } == .untrusted)
        _ = try await fixture.verifier(validationTime: .now, now: signed).verifyNotification(payload)
    }

    @Test("alg other than ES256, x5c of 2 or 4, missing x5c")
    func headerShape() async throws {
        let fixture = try SignedFixture()
        let good = try fixture.notification()
        let parts = good.split(separator: ".").map(String.init)
        func withHeader(_ header: [String: Any]) throws -> String {
            let data = try JSONSerialization.data(withJSONObject: header)
            return [JWSSigner.base64URL(data), parts[1], parts[2]].joined(separator: ".")
        }
        let headerData = try #require(Base64URL.decode(Substring(parts[0])))
        let header = try #require(try JSONSerialization.jsonObject(with: headerData) as? [String: Any])
        let x5c = try #require(header["x5c"] as? [String])
        for alg in ["ES384", "none", "HS256"] {
            #expect(await category { try await fixture.verifier().verifyNotification(try withHeader(["alg": alg, "x5c": x5c])) } == .malformed)
        }
        #expect(await category { try await fixture.verifier().verifyNotification(try withHeader(["x5c": x5c])) } == .malformed)
        #expect(await category { try await fixture.verifier().verifyNotification(try withHeader(["alg": "ES256"])) } == .malformed)
        #expect(
            await category { try await fixture.verifier().verifyNotification(try withHeader(["alg": "ES256", "x5c": Array(x5c.prefix(2))])) }
                == .malformed)
        #expect(
            await category { try await fixture.verifier().verifyNotification(try withHeader(["alg": "ES256", "x5c": x5c + [x5c[2]]])) } == .malformed)
        // base64url instead of standard base64 inside x5c.
        let urlSafe = x5c.map { $0.replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_") }
        if urlSafe != x5c {
            #expect(
                await category { try await fixture.verifier().verifyNotification(try withHeader(["alg": "ES256", "x5c": urlSafe])) } == .certificate)
        }
        // Unknown header keys (Apple's mocks add typ) are ignored.
        let typHeader = JWSSigner.base64URL(try JSONSerialization.data(withJSONObject: ["alg": "ES256", "x5c": x5c, "typ": "JWT"]))
        let signature = try fixture.chain.leafKey.signature(for: Data((typHeader + "." + parts[1]).utf8)).rawRepresentation
        _ = try await fixture.verifier().verifyNotification(typHeader + "." + parts[1] + "." + JWSSigner.base64URL(signature))
    }

    @Test("wrong segment counts and non-JSON payloads")
    func structure() async throws {
        let fixture = try SignedFixture()
        let good = try fixture.notification()
        let parts = good.split(separator: ".").map(String.init)
        for text in [parts[0] + "." + parts[1], good + ".extra", "", "...", "not a jws"] {
            #expect(await category { try await fixture.verifier().verifyNotification(text) } == .malformed)
        }
        let notJSON = try fixture.signer.sign(payloadBytes: Data("hello".utf8))
        #expect(await category { try await fixture.verifier().verifyNotification(notJSON) } == .malformed)
    }

    @Test("a signature by another key, DER-encoded, or of the wrong length")
    func signatures() async throws {
        let fixture = try SignedFixture()
        let good = try fixture.notification()
        let parts = good.split(separator: ".").map(String.init)
        let input = Data((parts[0] + "." + parts[1]).utf8)
        let otherKey = P256.Signing.PrivateKey()
        let other = try otherKey.signature(for: input)
        let der = try fixture.chain.leafKey.signature(for: input).derRepresentation
        let raw = try fixture.chain.leafKey.signature(for: input).rawRepresentation
        for signature in [other.rawRepresentation, der, raw.prefix(63), raw + Data([0])] {
            let text = parts[0] + "." + parts[1] + "." + JWSSigner.base64URL(Data(signature))
            #expect(await category { try await fixture.verifier().verifyNotification(text) } == .untrusted)
        }
    }

    @Test("a nested transaction with a bad signature inside a valid envelope")
    func badNestedSignature() async throws {
        let fixture = try SignedFixture()
        let nested = try fixture.signer.sign(fixture.transaction())
        let nestedParts = nested.split(separator: ".").map(String.init)
        let otherSignature = try P256.Signing.PrivateKey().signature(for: Data((nestedParts[0] + "." + nestedParts[1]).utf8))
        let forged = nestedParts[0] + "." + nestedParts[1] + "." + JWSSigner.base64URL(otherSignature.rawRepresentation)
        let envelope = try fixture.notification(signedTransaction: forged)
        #expect(await category { try await fixture.verifier().verifyNotification(envelope) } == .untrusted)
    }

    @Test("authentic but for another bundle, environment or app id: ignored, not accepted")
    func identity() async throws {
        let fixture = try SignedFixture()
        let verifier = fixture.verifier()
        for payload in [try fixture.notification(bundleId: "com.other.app"), try fixture.notification(environment: .production)] {
            let notification = try await verifier.verifyNotification(payload)
            #expect(verifier.identityVerdict(for: notification) != .accepted)
        }
        let production = fixture.verifier(environments: [.production], appAppleId: 42)
        let wrongApp = try await production.verifyNotification(try fixture.notification(environment: .production, appAppleId: 43))
        #expect(production.identityVerdict(for: wrongApp) != .accepted)
        let rightApp = try await production.verifyNotification(try fixture.notification(environment: .production, appAppleId: 42))
        #expect(production.identityVerdict(for: rightApp) == .accepted)
        // A nested transaction for another bundle inside an envelope for ours.
        let mixed = try fixture.notification(signedTransaction: try fixture.signer.sign(fixture.transaction(bundleId: "com.other.app")))
        #expect(verifier.identityVerdict(for: try await verifier.verifyNotification(mixed)) != .accepted)
    }

    @Test("unknown notification types and extra fields decode and keep their raw values")
    func unknownValues() async throws {
        let fixture = try SignedFixture()
        let payload: [String: Any] = [
            "notificationType": "SOMETHING_NEW", "subtype": "BRAND_NEW", "notificationUUID": UUID().uuidString,
            "signedDate": SignedFixture.signedDate, "futureField": ["nested": true],
            "data": ["bundleId": SignedFixture.bundleId, "environment": "Sandbox", "status": 9],
        ]
        let text = try fixture.signer.sign(payloadBytes: try JSONSerialization.data(withJSONObject: payload))
        let notification = try await fixture.verifier().verifyNotification(text)
        #expect(notification.payload.notificationType == "SOMETHING_NEW")
        #expect(notification.payload.subtype == "BRAND_NEW")
    }
}
