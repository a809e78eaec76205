import ArgumentParser
import Foundation
import HostileInput
import LocalSigning
import NIOCore
import StorekeeperRuntime

/// `storekeeper-bench drill hostile`: every attack of a stranger (and of absurd authentic content) against real `serve`
/// and `work` processes — PASS/FAIL per attack.
struct HostileDrill: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "hostile",
        abstract: "Attacks on serve and work: untrusted dates, absurd signed content, costly JSON, stalled connections, CSRF, fuzzing.")

    @Option(help: "Structure-aware fuzz cases per chain (trusted and untrusted).") var fuzzCases = 2_000
    @Option(help: "Seed of the fuzz cases.") var seed: UInt64 = 20_261_124
    @Option(help: "Stalled connections that send half a request head.") var stalledHeads = 1_100
    @Option(help: "Connections that send most of a 512 KiB body, then stall.") var stalledBodies = 300
    @Option(help: "Requests whose last body byte comes after their answer.") var lateEnds = 16
    @Option(help: "Connections that send 62 KiB of a 400,000-byte body, then stall.") var partialBodyCount = 4_096
    @Option(help: "Uploads abandoned mid-body.") var abortedUploadCount = 1_000
    @Option(help: "Connections that ask for large answers and read none (more than serve accepts at once).") var stoppedReaderCount = 1_100

    static let adminKey = "drill-admin"
    static let metricsKey = "drill-metrics"

    func run() async throws {
        _ = FileDescriptorLimit.raiseToHardLimit()
        signal(SIGPIPE, SIG_IGN)
        var verdict = DrillVerdict("hostile")
        let environment = [
            "STOREKEEPER_ADMIN_KEYS": Self.adminKey, "STOREKEEPER_METRICS_KEYS": Self.metricsKey,
            "STOREKEEPER_HTTP_HEAD_TIMEOUT": "5", "STOREKEEPER_HTTP_BODY_TIMEOUT": "5", "STOREKEEPER_HTTP_IDLE_TIMEOUT": "5",
            "STOREKEEPER_HTTP_WRITE_TIMEOUT": "5", "STOREKEEPER_STRIPE_WEBHOOK_SECRETS": Self.stripeSecret,
        ]
        try await withDrillSystem(workers: 1, clients: 16, environment: environment) { system, _, _ in
            let attacker = NotificationSigner(signer: try JWSSigner(chain: try LocalSigningChain.generate()), bundleId: SystemUnderTest.bundleId)
            say("attack: a JWS signed by the attacker's own chain, dated in the year 10000")
            try await untrustedDates(system, attacker: attacker, verdict: &verdict)
            say("attack: authentic but absurd content")
            try await absurdContent(system, verdict: &verdict)
            say("attack: 512 KiB bodies of costly shapes")
            try await costlyShapes(system, attacker: attacker, verdict: &verdict)
            say("attack: stalled connections and unfinished bodies")
            try await stalledConnections(system, verdict: &verdict)
            say("attack: clients that stop reading large answers")
            try await stoppedReaders(system, verdict: &verdict)
            say("attack: cross-site requests to the admin API and dashboard")
            await crossSite(system, verdict: &verdict)
            say("attack: smaller holes")
            try await smallerHoles(system, attacker: attacker, verdict: &verdict)
            say("attack: Stripe's intake: forged, stale and replayed events, costly JSON under a valid signature")
            try await stripe(system, verdict: &verdict)
            say("attack: structure-aware fuzzing, \(fuzzCases) cases each with a trusted and an untrusted chain")
            try await fuzz(system, attacker: attacker, verdict: &verdict)
            verdict.check(system.serve?.hasExited == false && system.workers.allSatisfy { !$0.hasExited }, "serve and work are still running")
        }
        say(
            "attack: the second and third reviews' (late request ends, partial bodies, colliding keys, offer races, redirects, heavy ids, NUL parameters, aborted uploads, erased prefixes, shared adjustment keys, crafted notices, Apple reads, Google Play's intake, the database stopped)"
        )
        try await secondReview(verdict: &verdict)
        try verdict.finish()
    }

    /// A fresh subscription's `subscribe` event, at `date`.
    static func subscribeEvent(_ index: Int, at date: Date = Date()) -> SimulatedEvent {
        let subscription = SimulatedEvent.Subscription(
            originalTransactionId: String(4_000_000_000_000 + index), productId: "pro.monthly", accountId: UUID(),
            bundleId: SystemUnderTest.bundleId)
        return SimulatedEvent.scenario(.subscribe, subscription: subscription, at: date)
    }

    static func body(_ signedPayload: String) -> ByteBuffer {
        ByteBuffer(bytes: (try? JSONEncoder().encode(["signedPayload": signedPayload])) ?? Data())
    }

    func untrustedDates(_ system: SystemUnderTest, attacker: NotificationSigner, verdict: inout DrillVerdict) async throws {
        let envelope = try HostileContent.signedPayload(
            Self.subscribeEvent(1), mutations: [.init(.envelope, "signedDate", HostileContent.year10000, .refused)], signer: attacker)
        let answer = await system.post(Self.body(envelope))
        verdict.check(answer.status == 400, "intake answers 400 (got \(answer.status.map(String.init) ?? "none"))")
        verdict.check(await system.request("/healthz").status == 200, "serve still answers /healthz")
        var transaction = Self.subscribeEvent(2).transaction!
        transaction.signedDate = 253_402_300_800_000
        let claim = try attacker.signer.sign(transaction)
        let claimed = await system.request(
            "/v1/accounts/\(UUID())/transactions", method: .POST,
            headers: [("Authorization", "Bearer bench"), ("Content-Type", "application/json")],
            body: ByteBuffer(bytes: try JSONEncoder().encode(["signedTransaction": claim])))
        verdict.check(claimed.status == 400, "a claim of it answers 400 (got \(claimed.status.map(String.init) ?? "none"))")
        verdict.check(await system.request("/healthz").status == 200, "serve still answers /healthz")
    }

    func absurdContent(_ system: SystemUnderTest, verdict: inout DrillVerdict) async throws {
        var expected: [(UUID, HostileContent.Mutation)] = []
        var wrong: [String] = []
        for (index, mutation) in HostileContent.mutations.enumerated() {
            let uuid = UUID()
            let payload = try HostileContent.signedPayload(
                Self.subscribeEvent(100 + index), mutations: [mutation], signer: system.signer, notificationUUID: uuid)
            let answer = await system.post(Self.body(payload))
            let wanted: UInt = mutation.expectation == .refused ? 400 : 200
            if answer.status != wanted { wrong.append("\(mutation.name): \(answer.status.map(String.init) ?? "no answer")") }
            if mutation.expectation != .refused { expected.append((uuid, mutation)) }
        }
        verdict.check(
            wrong.isEmpty, "\(HostileContent.mutations.count) signed absurdities answered 200 or 400 as expected" + Self.listed(wrong))
        let done = try await system.eventually(60) {
            try await system.count("SELECT count(*) FROM notifications WHERE applied_at IS NULL") == 0
        }
        verdict.check(done, "work processed every stored one")
        var outcomes: [String] = []
        for (uuid, mutation) in expected {
            let outcome = try await system.text(
                "SELECT coalesce(apply_outcome, 'none') || '|' || coalesce(rejected_reason, '') FROM notifications WHERE notification_uuid = '\(uuid)'"
            )
            let rejected = outcome.hasPrefix("rejected_content|") && outcome.count > "rejected_content|".count
            if rejected != (mutation.expectation == .rejectedContent) { outcomes.append("\(mutation.name): \(outcome.prefix(80))") }
        }
        verdict.check(outcomes.isEmpty, "each recorded rejected_content with a reason, or applied, as expected" + Self.listed(outcomes))
        let failed = try await system.count("SELECT count(*) FROM jobs WHERE state = 'failed'")
        let attempts = try await system.count("SELECT coalesce(max(attempt), 0) FROM job_history")
        verdict.check(failed == 0 && attempts <= 1, "no job failed and none needed a second attempt (\(failed) failed)")
        verdict.check(system.workers.allSatisfy { !$0.hasExited }, "work is still running")
        var transaction = Self.subscribeEvent(99).transaction!
        transaction.expiresDate = Int64.max
        let claimed = await system.request(
            "/v1/accounts/\(UUID())/transactions", method: .POST,
            headers: [("Authorization", "Bearer bench"), ("Content-Type", "application/json")],
            body: ByteBuffer(bytes: try JSONEncoder().encode(["signedTransaction": try system.signer.signer.sign(transaction)])))
        verdict.check(
            claimed.status == 400 && claimed.body.contains("rejected_content"),
            "a claim with expiresDate = Int64.max answers 400 rejected_content (got \(claimed.status.map(String.init) ?? "none"))")
    }

    func costlyShapes(_ system: SystemUnderTest, attacker: NotificationSigner, verdict: inout DrillVerdict) async throws {
        var slow: [String] = []
        var statuses: [UInt: Int] = [:]
        for shape in HostileShapes.all(size: 512 * 1024) + HostileShapes.all(size: 180 * 1024).map(Self.wrapped(attacker)) {
            let started = ContinuousClock.now
            let answer = await system.post(ByteBuffer(bytes: shape.bytes))
            let seconds = (ContinuousClock.now - started).seconds
            statuses[answer.status ?? 0, default: 0] += 1
            if seconds > 1 || ![400, 401, 413].contains(answer.status ?? 0) {
                slow.append("\(shape.name): \(answer.status.map(String.init) ?? "no answer") in \(String(format: "%.2f", seconds)) s")
            }
        }
        verdict.check(slow.isEmpty, "every shape answered 400/401/413 within 1 s (\(Self.counts(statuses)))" + Self.listed(slow))
        // Two costly bodies at once must not make a valid notification wait.
        let heavy = ByteBuffer(bytes: HostileShapes.all(size: 512 * 1024)[1].bytes)
        async let first = system.post(heavy)
        async let second = system.post(heavy)
        let started = ContinuousClock.now
        let valid = await system.post(try system.subscribe(9_000, at: Date()).body)
        let seconds = (ContinuousClock.now - started).seconds
        _ = await (first, second)
        verdict.check(
            valid.status == 200 && seconds < 1,
            "a valid notification beside two costly bodies answers 200 in \(String(format: "%.3f", seconds)) s")
    }

    /// A shape as the payload of a JWS signed by `signer`, in an intake body.
    static func wrapped(_ signer: NotificationSigner) -> (HostileShapes.Shape) -> HostileShapes.Shape {
        { shape in
            let payload = (try? signer.signer.sign(payloadBytes: Data(shape.bytes))) ?? ""
            return HostileShapes.Shape(name: "signed payload: \(shape.name)", bytes: Array(Self.body(payload).readableBytesView))
        }
    }

    static func listed(_ problems: [String]) -> String {
        problems.isEmpty ? "" : "\n        " + problems.prefix(12).joined(separator: "\n        ")
    }

    static func counts(_ statuses: [UInt: Int]) -> String {
        statuses.sorted { $0.key < $1.key }.map { "\($0.key == 0 ? "none" : String($0.key)) × \($0.value)" }.joined(separator: ", ")
    }
}
