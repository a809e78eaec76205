import AppStoreModels
import ArgumentParser
import Crypto
import Foundation
import LocalSigning
import SignedData
import StorekeeperRuntime

struct VerifyBenchmarkCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "verify",
        abstract: "Fully verify distinct signed notifications (envelope + nested transaction + renewal info) on one core.",
        discussion: """
            Signs --count distinct notifications with a local Apple-shaped chain (P-384 root and intermediate, P-256 \
            leaf, as Apple's), then verifies them one after another on a single task for at least --seconds, with the \
            verified-chain cache as in production; then a cold pass with the cache off. Each notification is three \
            JWS: three signature checks with the cache, nine without. Last, the bare P-256 signature check is timed \
            on its own: three of them per notification bound what any verifier can reach on this machine, and the \
            gap to that bound is the cost of everything else (parsing, decoding, hashing).
            """
    )

    @Option(help: "Distinct notifications to sign.") var count = 2_000
    @Option(help: "Minimum measuring time in seconds.") var seconds = 5.0
    @Flag(help: "Print one JSON object on the last line.") var json = false

    func validate() throws {
        guard count > 0, seconds > 0 else { throw ValidationError("--count and --seconds must be positive") }
    }

    func run() async throws {
        let chain = try LocalSigningChain.generate()
        let bundleId = "com.example.bench"
        let signer = NotificationSigner(signer: try JWSSigner(chain: chain), bundleId: bundleId)
        let start = Date()
        let payloads = try (0..<count).map { index in
            let subscription = SimulatedEvent.Subscription(
                originalTransactionId: String(2_000_000_000_000 + index), productId: "pro.monthly", accountId: UUID(),
                bundleId: bundleId)
            let event = SimulatedEvent.scenario(.subscribe, subscription: subscription, at: start.addingTimeInterval(Double(index)))
            return try signer.signedPayload(for: event)
        }
        let policy = VerificationPolicy(bundleId: bundleId, appAppleId: nil, environments: [.sandbox])

        let verifier = SignedDataVerifier(rootCertificates: [chain.root], policy: policy)
        let clock = ContinuousClock()
        var verified = 0
        let began = clock.now
        var elapsed = Duration.zero
        repeat {
            for payload in payloads {
                let notification = try await verifier.verifyNotification(payload)
                guard verifier.identityVerdict(for: notification) == .accepted else { throw CommandFailure("benchmark payload rejected") }
                verified += 1
            }
            elapsed = clock.now - began
        } while elapsed < .seconds(seconds)
        let warmSeconds = elapsed.seconds
        let perSecond = Double(verified) / warmSeconds

        let cold = SignedDataVerifier(rootCertificates: [chain.root], policy: policy, cachesChains: false)
        let coldCount = min(count, 300)
        let coldBegan = clock.now
        for payload in payloads.prefix(coldCount) { _ = try await cold.verifyNotification(payload) }
        let coldElapsed = clock.now - coldBegan
        let coldSeconds = coldElapsed.seconds
        let coldPerSecond = Double(coldCount) / coldSeconds

        let checksPerSecond = try Self.signatureChecksPerSecond(for: clock)
        let bound = checksPerSecond / 3
        let overhead = 1e6 / perSecond - 1e6 / bound

        var report = BenchmarkReport()
        report.lines = [
            "verify: \(verified) notifications (\(count) distinct, 3 JWS each) in \(String(format: "%.2f", warmSeconds)) s on one task",
            "  with the verified-chain cache: \(Int(perSecond)) notifications/s (\(String(format: "%.1f", 1e6 / perSecond)) µs each)",
            "  without it (cold):             \(Int(coldPerSecond)) notifications/s (\(String(format: "%.1f", 1e6 / coldPerSecond)) µs each)",
            "  bare P-256 signature checks:   \(Int(checksPerSecond))/s here now, so at most \(Int(bound)) notifications/s; "
                + "everything else costs \(String(format: "%.1f", overhead)) µs per notification",
        ]
        report.fields = [
            ("benchmark", .text("verify")), ("notifications", .integer(verified)), ("distinct", .integer(count)),
            ("seconds", .number(warmSeconds)), ("notificationsPerSecond", .integer(Int(perSecond))),
            ("uncachedNotificationsPerSecond", .integer(Int(coldPerSecond))),
            ("signatureChecksPerSecond", .integer(Int(checksPerSecond))), ("signatureBoundPerSecond", .integer(Int(bound))),
        ]
        report.print(json: json)
    }

    /// One P-256 signature check, over and over for a second: the machine's speed for the part no verifier can skip.
    private static func signatureChecksPerSecond(for clock: ContinuousClock) throws -> Double {
        let key = P256.Signing.PrivateKey()
        let digest = SHA256.hash(data: Data("storekeeper".utf8))
        let signature = try key.signature(for: digest)
        let publicKey = key.publicKey
        var checks = 0
        let began = clock.now
        repeat {
            for _ in 0..<100 where publicKey.isValidSignature(signature, for: digest) { checks += 1 }
        } while clock.now - began < .seconds(1)
        return Double(checks) / (clock.now - began).seconds
    }
}
