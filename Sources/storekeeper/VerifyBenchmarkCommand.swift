import AppStoreModels
import ArgumentParser
import Foundation
import LocalSigning
import SignedData

struct VerifyBenchmarkCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "verify",
        abstract: "Fully verify distinct signed notifications (envelope + nested transaction + renewal info) on one core.",
        discussion: """
            Signs --count distinct notifications with a local Apple-shaped chain (P-384 root and intermediate, P-256 \
            leaf, as Apple's), then verifies them one after another on a single task for at least --seconds, with the \
            verified-chain cache as in production; then a cold pass with the cache off. Each notification is three \
            JWS: three signature checks with the cache, nine without.
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

        var report = BenchmarkReport()
        report.lines = [
            "verify: \(verified) notifications (\(count) distinct, 3 JWS each) in \(String(format: "%.2f", warmSeconds)) s on one task",
            "  with the verified-chain cache: \(Int(perSecond)) notifications/s (\(String(format: "%.1f", 1e6 / perSecond)) µs each)",
            "  without it (cold):             \(Int(coldPerSecond)) notifications/s (\(String(format: "%.1f", 1e6 / coldPerSecond)) µs each)",
        ]
        report.fields = [
            ("benchmark", .text("verify")), ("notifications", .integer(verified)), ("distinct", .integer(count)),
            ("seconds", .number(warmSeconds)), ("notificationsPerSecond", .integer(Int(perSecond))),
            ("uncachedNotificationsPerSecond", .integer(Int(coldPerSecond))),
        ]
        report.print(json: json)
    }
}
