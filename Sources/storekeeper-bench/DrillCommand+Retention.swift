import AppStoreModels
import Foundation
import HostileInput
import LocalSigning
import NIOCore
import StorekeeperRuntime

/// The retention endpoint as a stranger attacks it: forged, stale and replayed requests, costly bodies, absurd ids
/// under a valid signature, and a race for a once-per-account offer.
extension HostileDrill {
    static let retentionDefault = "6f0b1c7e-3b1f-4b7a-9a43-6d1f3c2b9e10"
    static let retentionPolicy = """
        default: { message: \(retentionDefault) }
        rules:
          - name: welcome_back
            answer: { promotional_offer: { offer: welcome, message: 0b8e6a51-2c3d-4e5f-8a9b-1c2d3e4f5a6b } }
        """

    static func retentionBody(_ signer: JWSSigner, _ originalTransactionId: String, id: UUID = UUID(), signed: Date = Date()) throws -> ByteBuffer {
        let request = RetentionRequestPayload(
            originalTransactionId: originalTransactionId, appAppleId: nil, productId: "pro.monthly", userLocale: "en-US",
            requestIdentifier: id.uuidString, signedDate: Int64(signed.timeIntervalSince1970 * 1000), environment: .sandbox)
        return Self.body(try signer.sign(request))
    }

    static func retention(_ system: SystemUnderTest, path: String = "/apple/retention-message", _ body: ByteBuffer) async -> (
        status: UInt?, body: String, seconds: Double
    ) {
        let started = ContinuousClock.now
        let answer = await system.request(path, method: .POST, headers: [("Content-Type", "application/json")], body: body, timeout: 10)
        return (answer.status, answer.body, (ContinuousClock.now - started).seconds)
    }

    func retentionAttacks(_ system: SystemUnderTest, attacker: NotificationSigner, verdict: inout DrillVerdict) async throws {
        let apple = system.signer.signer
        let subscribed = try system.subscribe(9_300, at: Date())
        _ = await system.post(subscribed.body)
        let subscription = String(3_000_000_000_000 + 9_300)
        _ = try await system.eventually(30) {
            try await system.count("SELECT count(*) FROM subscriptions WHERE original_transaction_id = '\(subscription)'") == 1
        }
        let before = try await system.count("SELECT count(*) FROM retention_decisions")
        let stale = await Self.retention(system, try Self.retentionBody(apple, subscription, signed: Date().addingTimeInterval(-3_600)))
        verdict.check(
            stale.status == 401 && stale.body.contains("stale_request"), "retention: a request signed an hour ago answers 401 stale_request")
        let forged = await Self.retention(system, try Self.retentionBody(attacker.signer, subscription))
        verdict.check(
            forged.status == 401, "retention: a request signed by the attacker's chain answers 401 (got \(forged.status.map(String.init) ?? "none"))")

        // Costly bodies, as at the intake.
        var slow: [String] = []
        for shape in HostileShapes.all(size: 60 * 1024) + HostileShapes.all(size: 40 * 1024).map(Self.wrapped(attacker)) {
            let answer = await Self.retention(system, ByteBuffer(bytes: shape.bytes))
            if answer.seconds > 1 || ![400, 401, 413].contains(answer.status ?? 0) {
                slow.append("\(shape.name): \(answer.status.map(String.init) ?? "no answer") in \(String(format: "%.2f", answer.seconds)) s")
            }
        }
        verdict.check(slow.isEmpty, "retention: every costly shape answered 400/401/413 within 1 s" + Self.listed(slow))
        let after = try await system.count("SELECT count(*) FROM retention_decisions")
        verdict.check(after == before, "retention: refused requests stored no decision (\(after - before))")

        // Twenty requests at once for one customer: the once-per-account offer is signed once.
        let bodies = try (0..<20).map { _ in try Self.retentionBody(apple, subscription) }
        let answers = await withTaskGroup(of: (UInt?, String, Double).self) { group in
            for body in bodies { group.addTask { await Self.retention(system, body) } }
            return await group.reduce(into: [(UInt?, String, Double)]()) { $0.append($1) }
        }
        let offers = answers.filter { $0.0 == 200 && $0.1.contains("promotionalOffer") }.count
        let defaults = answers.filter { $0.0 == 200 && $0.1.contains(Self.retentionDefault) }.count
        // One of them signs it; a request that waited past the policy's deadline for the account's lock gets the
        // default as the others do (a debug build on a loaded machine may see that for all of them).
        let odd = answers.filter { !($0.0 == 200 && ($0.1.contains("promotionalOffer") || $0.1.contains(Self.retentionDefault))) || $0.2 >= 2 }
            .map { "\($0.0.map(String.init) ?? "no answer") in \(String(format: "%.2f", $0.2)) s: \($0.1.prefix(200))" }
        verdict.check(
            offers <= 1 && odd.isEmpty,
            "retention: 20 requests at once for one account: \(offers) signed offer, \(defaults) defaults, each within 2 s (at most one offer)"
                + Self.listed(odd))
        let signed = try await system.count(
            """
            SELECT count(*) FROM offer_signatures o JOIN subscriptions s ON s.account_id = o.account_id
            WHERE s.original_transaction_id = '\(subscription)' AND o.offer_id = 'welcome'
            """)
        verdict.check(signed == offers, "retention: the once-per-account offer was signed as often as answered (\(signed))")

        // The same request again, whoever sends it: refused.
        let once = try Self.retentionBody(apple, subscription)
        let first = await Self.retention(system, once)
        let replayed = await Self.retention(system, once)
        verdict.check(first.status == 200, "retention: a fresh request answers 200 (got \(first.status.map(String.init) ?? "none"))")
        verdict.check(
            replayed.status == 401 && replayed.body.contains("replayed_request"),
            "retention: a request replayed answers 401 replayed_request (got \(replayed.status.map(String.init) ?? "none"))")
        // Absurd ids under Apple's signature: answered (the default) or refused, quickly, never a crash.
        var absurd: [String] = []
        for id in [String(repeating: "9", count: 20_000), "'; DROP TABLE subscriptions; --", "\u{0}\u{1}", String(repeating: "🙂", count: 5_000), ""] {
            let answer = await Self.retention(system, try Self.retentionBody(apple, id))
            if ![200, 400].contains(answer.status ?? 0) || answer.seconds > 1 {
                absurd.append("\(id.prefix(12))…: \(answer.status.map(String.init) ?? "none") in \(String(format: "%.2f", answer.seconds)) s")
            }
        }
        verdict.check(
            absurd.isEmpty, "retention: absurd originalTransactionIds under a valid signature answer 200 or 400 within 1 s" + Self.listed(absurd))

        verdict.check(system.serve?.hasExited == false, "retention: serve is still running")
    }

    /// With the database stopped, a retention request still gets the default, well inside Apple's 700 ms.
    func retentionWithDatabaseStopped(_ system: SystemUnderTest, verdict: inout DrillVerdict) async throws {
        var late: [String] = []
        for index in 0..<5 {
            let answer = await Self.retention(system, try Self.retentionBody(system.signer.signer, String(3_000_000_000_000 + 9_300 + index)))
            if answer.status != 200 || !answer.body.contains(Self.retentionDefault) || answer.seconds > 0.7 {
                late.append("\(answer.status.map(String.init) ?? "none") in \(String(format: "%.3f", answer.seconds)) s")
            }
        }
        verdict.check(late.isEmpty, "the database stopped: 5 retention requests each answered the default within 700 ms" + Self.listed(late))
    }
}
