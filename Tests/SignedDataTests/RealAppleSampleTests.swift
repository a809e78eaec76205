import AppStoreModels
import Crypto
import Foundation
import TestSupport
import Testing
import X509

@testable import SignedData

@Suite("Real Apple-signed samples", .enabled(if: AppleSamples.available, Comment(rawValue: AppleSamples.absence)))
struct RealAppleSampleTests {
    let root: Certificate

    init() throws { root = try RealAppleSamples.appleRoot() }

    @Test("every sample verifies against Apple Root CA - G3 at its signedDate", arguments: RealAppleSamples.all.map(\.number))
    func sampleVerifies(number: Int) async throws {
        let sample = try #require(RealAppleSamples.all.first { $0.number == number })
        let verifier = RealAppleSamples.verifier(bundleId: sample.bundleId ?? "any.bundle", roots: [root])
        let text = try sample.text
        switch sample.kind {
        case .notification:
            let notification = try await verifier.verifyNotification(text)
            #expect(verifier.identityVerdict(for: notification) == .accepted)
            #expect(notification.payload.signedDate != nil)
        case .transaction:
            if sample.hasEnvironment {
                let transaction = try await verifier.verifyTransaction(text)
                #expect(!transaction.originalTransactionId.isEmpty)
            } else {
                // Chain and signature hold; Apple's identity rule rejects a payload without an environment.
                let transaction = try await verifier.verify(text, as: TransactionPayload.self, validationDate: .signedDate)
                #expect(transaction.environment == nil)
                await #expect(throws: VerificationError.self) { try await verifier.verifyTransaction(text) }
            }
        case .renewal:
            if sample.hasEnvironment {
                _ = try await verifier.verifyRenewalInfo(text)
            } else {
                _ = try await verifier.verify(text, as: RenewalInfoPayload.self, validationDate: .signedDate)
                await #expect(throws: VerificationError.self) { try await verifier.verifyRenewalInfo(text) }
            }
        }
    }

    @Test("notification 46 carries verified nested transaction and renewal info")
    func nestedPayloadsOfNotification46() async throws {
        let verifier = RealAppleSamples.verifier(bundleId: "com.tuyoo.testing", roots: [root])
        let notification = try await verifier.verifyNotification(try RealAppleSamples.all[0].text)
        #expect(notification.payload.notificationType == "DID_CHANGE_RENEWAL_STATUS")
        #expect(notification.payload.subtype == "AUTO_RENEW_DISABLED")
        #expect(notification.transaction?.originalTransactionId == "2000000310325824")
        #expect(notification.renewalInfo?.autoRenewStatus == 0)
        #expect(notification.payload.data?.status == nil)
    }

    @Test("a verifier at 'now' rejects every sample: their leaves have expired")
    func validationAtNowRejects() async throws {
        let verifier = SignedDataVerifier(
            rootCertificates: [root],
            policy: VerificationPolicy(bundleId: "com.tuyoo.testing", appAppleId: nil, environments: [.sandbox], validationTime: .now))
        let error = await #expect(throws: VerificationError.self) {
            try await verifier.verifyNotification(try RealAppleSamples.all[0].text)
        }
        #expect(error?.category == .untrusted)
    }

    @Test("a Production verifier ignores the Sandbox notifications")
    func productionIgnoresSandbox() async throws {
        let verifier = SignedDataVerifier(
            rootCertificates: [root],
            policy: VerificationPolicy(bundleId: "com.tuyoo.testing", appAppleId: 1_515_657_185, environments: [.production]))
        let notification = try await verifier.verifyNotification(try RealAppleSamples.all[0].text)
        guard case .ignored = verifier.identityVerdict(for: notification) else {
            Issue.record("a Sandbox notification was accepted by a Production verifier")
            return
        }
    }

    @Test("changing any byte makes a sample fail", arguments: RealAppleSamples.all.map(\.number))
    func tamperedSampleFails(number: Int) async throws {
        let sample = try #require(RealAppleSamples.all.first { $0.number == number })
        let verifier = RealAppleSamples.verifier(bundleId: sample.bundleId ?? "any.bundle", roots: [root])
        let text = try sample.text
        let segments = text.split(separator: ".").map(String.init)
        var mutations = 0
        for segmentIndex in 0..<3 {
            let bytes = try #require(Base64URL.decode(Substring(segments[segmentIndex])))
            // Every signature byte; a spread of header and payload bytes (first, last and every 37th).
            let positions = segmentIndex == 2 ? Array(bytes.indices) : Array(Set(Array(stride(from: 0, to: bytes.count, by: 37)) + [bytes.count - 1]))
            for position in positions {
                var mutated = bytes
                mutated[mutated.startIndex + position] ^= 0x01
                var parts = segments
                parts[segmentIndex] = Base64URL.encode(mutated)
                let tampered = parts.joined(separator: ".")
                await #expect(throws: VerificationError.self, "byte \(position) of segment \(segmentIndex)") {
                    switch sample.kind {
                    case .notification: _ = try await verifier.verifyNotification(tampered)
                    case .transaction: _ = try await verifier.verify(tampered, as: TransactionPayload.self, validationDate: .signedDate)
                    case .renewal: _ = try await verifier.verify(tampered, as: RenewalInfoPayload.self, validationDate: .signedDate)
                    }
                }
                mutations += 1
            }
        }
        #expect(mutations > 64)
    }

    @Test("another trust anchor rejects every sample")
    func otherRootRejects() async throws {
        let verifier = RealAppleSamples.verifier(bundleId: "com.tuyoo.testing", roots: [try LocalRoot.make()])
        let error = await #expect(throws: VerificationError.self) {
            try await verifier.verifyNotification(try RealAppleSamples.all[0].text)
        }
        #expect(error?.category == .untrusted)
    }
}

/// CI must run the tests built on the real samples, not skip them.
@Suite("Real Apple samples where they are required")
struct RealAppleSamplesRequiredTests {
    @Test("with STOREKEEPER_REQUIRE_APPLE_SAMPLES=1 (.ci/run), the samples are present")
    func presentWhenRequired() {
        guard AppleSamples.required else { return }
        #expect(
            FileManager.default.fileExists(atPath: AppleSamples.directory.appendingPathComponent("46-notification.jws").path),
            "the real samples are required here but missing from \(AppleSamples.directory.path)")
    }

    @Test("the repository's Apple Root CA - G3 is Apple's (SHA-256 as Apple publishes it)")
    func shippedRoot() throws {
        let bytes = try Data(contentsOf: AppleSamples.rootCertificate)
        let digest = SHA256.hash(data: bytes).map { String(format: "%02x", $0) }.joined()
        #expect(digest == "63343abfb89a6a03ebb57e9b3f5fa7be7c4f5c756f3017b3a8c488c3653e9179")
    }
}
