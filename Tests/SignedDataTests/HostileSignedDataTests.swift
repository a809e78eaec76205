import AppStoreModels
import Foundation
import HostileInput
import LocalSigning
import SignedData
import TestSupport
import Testing

/// What a stranger's JWS and a compromised signer's content do to verification, without a database. Expectations
/// are those of issue 20 and of Apple's documentation: a `signedDate` outside 2000-01-01…now + 1 day is malformed
/// whoever signed it; content outside 1970…9999, negative prices, NUL bytes and oversized ids is authentic but
/// rejected; nothing signed by another chain is ever accepted.
@Suite("Hostile signed data")
struct HostileSignedDataTests {
    static let now = Date(timeIntervalSince1970: 1_764_000_000)  // 2025-11-24

    static func event(at date: Date = now) -> SimulatedEvent {
        let subscription = SimulatedEvent.Subscription(
            originalTransactionId: "4000000000001", productId: "pro.monthly", accountId: UUID(), bundleId: SignedFixture.bundleId)
        return SimulatedEvent.scenario(.subscribe, subscription: subscription, at: date)
    }

    static func signer(_ fixture: SignedFixture) -> NotificationSigner {
        NotificationSigner(signer: fixture.signer, bundleId: SignedFixture.bundleId)
    }

    /// A stranger's nested payload is never reached: its envelope fails the chain first.
    @Test(
        "an envelope or nested payload dated outside 2000-01-01…now + 1 day is malformed, from any chain",
        arguments: ["253402300800000", "9223372036854775807", "-9223372036854775808", "946684799999", "1764172800001"])
    func implausibleSigningDates(milliseconds: String) async throws {
        let trusted = try SignedFixture()
        let stranger = try SignedFixture()
        let verifier = trusted.verifier(now: Self.now)
        for fixture in [trusted, stranger] {
            for place in [HostileContent.Place.envelope, .transaction, .renewalInfo] {
                let payload = try HostileContent.signedPayload(
                    Self.event(), mutations: [.init(place, "signedDate", milliseconds, .refused)], signer: Self.signer(fixture))
                do {
                    _ = try await verifier.verifyNotification(payload)
                    Issue.record("\(place) signedDate \(milliseconds) was accepted")
                } catch {
                    let reachesTheDate = place == .envelope || fixture.chain.root == trusted.chain.root
                    #expect(error.category == (reachesTheDate ? .malformed : .untrusted), "\(place): \(error)")
                }
            }
        }
    }

    @Test("dates inside the window verify: 2000-01-01 and a day from now")
    func plausibleSigningDatesAtTheEdges() async throws {
        let fixture = try SignedFixture()
        let verifier = fixture.verifier(validationTime: .now, now: Self.now)
        for milliseconds in ["946684800000", "1764086400000"] {
            let payload = try HostileContent.signedPayload(
                Self.event(), mutations: [.init(.envelope, "signedDate", milliseconds, .applied)], signer: Self.signer(fixture))
            _ = try await verifier.verifyNotification(payload)
        }
    }

    /// Each named attack of the drill, without a database: refused ones throw `malformed`; the others verify, and
    /// their content is within the limits exactly when the attack expects it to be applied.
    @Test("every named absurdity is refused, rejected as content, or fine — as the drill expects")
    func namedAbsurdities() async throws {
        let fixture = try SignedFixture()
        let verifier = fixture.verifier(now: Self.now)
        for mutation in HostileContent.mutations {
            await Task.yield()
            let payload = try HostileContent.signedPayload(Self.event(), mutations: [mutation], signer: Self.signer(fixture))
            do {
                let notification = try await verifier.verifyNotification(payload)
                #expect(mutation.expectation != .refused, "verified: \(mutation.name)")
                #expect((notification.contentProblem != nil) == (mutation.expectation == .rejectedContent), "\(mutation.name)")
            } catch {
                #expect(mutation.expectation == .refused, "\(mutation.name): \(error)")
                #expect(error.category == .malformed, "\(mutation.name): \(error)")
            }
        }
    }

    @Test("content limits at their edges")
    func contentLimitEdges() {
        var transaction = TransactionPayload(
            transactionId: "1", originalTransactionId: "1", productId: "p", bundleId: "b", environment: .sandbox, signedDate: 0)
        transaction.expiresDate = 253_402_300_799_999
        transaction.price = 1_000_000_000_000
        transaction.quantity = 10_000
        transaction.productId = String(repeating: "p", count: 256)
        #expect(transaction.contentProblem == nil)
        for change in [
            { (t: inout TransactionPayload) in t.expiresDate = 253_402_300_800_000 }, { $0.signedDate = -1 }, { $0.price = -1 },
            { $0.quantity = 0 }, { $0.productId += "p" }, { $0.appAccountToken = "\u{0}" },
            { $0.advancedCommerceInfo = .array([.object(["k": .string("a\u{0}")])]) },
        ] {
            var changed = transaction
            change(&changed)
            #expect(changed.contentProblem != nil)
        }
    }

    /// Hundreds of random combinations of hostile fields, signed by the trusted chain and by a stranger's: the
    /// stranger's are never accepted, the trusted ones verify or are malformed, and nothing traps.
    @Test("structure-aware fuzzing with a trusted and an untrusted chain")
    func fuzzing() async throws {
        let trusted = try SignedFixture()
        let stranger = try SignedFixture()
        let verifier = trusted.verifier(now: Self.now)
        var random = SplitMix64(state: 0x5EED_2026_1124)
        let cases = HostileContent.fuzzed(count: 100, using: &random)
        var verified = 0
        for mutations in cases {
            // Signing and verifying run without suspending: let the suite's other tests have the threads.
            await Task.yield()
            let good = try HostileContent.signedPayload(Self.event(), mutations: mutations, signer: Self.signer(trusted))
            do {
                let notification = try await verifier.verifyNotification(good)
                _ = notification.contentProblem
                verified += 1
            } catch {
                #expect(error.category == .malformed, "\(mutations.map(\.name)): \(error)")
            }
            let forged = try HostileContent.signedPayload(Self.event(), mutations: mutations, signer: Self.signer(stranger))
            await #expect(throws: VerificationError.self, "\(mutations.map(\.name))") { try await verifier.verifyNotification(forged) }
        }
        #expect(verified > 0 && verified < cases.count)
    }
}
