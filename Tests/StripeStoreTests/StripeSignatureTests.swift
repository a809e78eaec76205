import Foundation
import StripeStore
import Testing

/// Stripe's signature scheme as Stripe documents it: HMAC-SHA256 of `"<t>.<raw body>"` keyed with the whole
/// `whsec_…` string, lowercase hex, any of several `v1`, `v0` ignored, a tolerance on `t`.
@Suite("Stripe webhook signatures")
struct StripeSignatureTests {
    static let body = Array(
        #"{"id":"evt_1","object":"event","type":"invoice.paid","livemode":false,"created":1,"data":{"object":{"id":"in_1","object":"invoice"}}}"#.utf8
    )
    static let now = Date(timeIntervalSince1970: 1_800_000_000)
    let verifier = StripeSignature(secrets: ["whsec_old_secret_value", "whsec_new_secret_value"])

    /// The documented algorithm, written out: what Stripe computes for `secret`.
    static func v1(_ secret: String, _ timestamp: Int64, _ body: [UInt8]) -> String {
        StripeSignature(secrets: [secret]).header(body: body, timestamp: timestamp).split(separator: ",")[1].dropFirst(3).description
    }

    @Test("a signature by either secret passes while one is rolled; v0 and unknown schemes are ignored")
    func rotation() throws {
        let t = Int64(Self.now.timeIntervalSince1970)
        let onlyNew = "t=\(t),v0=deadbeef,v1=\(Self.v1("whsec_new_secret_value", t, Self.body)),v2=abc"
        #expect(try verifier.verify(header: onlyNew, body: Self.body, now: Self.now) == Self.now)
        let both = StripeSignature(secrets: ["whsec_old_secret_value", "whsec_new_secret_value"]).header(body: Self.body, timestamp: t)
        #expect(both.split(separator: ",").filter { $0.hasPrefix("v1=") }.count == 2)
        #expect(throws: Never.self) { try verifier.verify(header: both, body: Self.body, now: Self.now) }
    }

    @Test("a wrong secret, a changed body, a v0 alone and an old or future t are refused")
    func refusals() {
        let t = Int64(Self.now.timeIntervalSince1970)
        let foreign = "t=\(t),v1=\(Self.v1("whsec_someone_else", t, Self.body))"
        #expect(throws: StripeSignature.Refusal.noMatch) { try verifier.verify(header: foreign, body: Self.body, now: Self.now) }
        let good = "t=\(t),v1=\(Self.v1("whsec_old_secret_value", t, Self.body))"
        #expect(throws: StripeSignature.Refusal.noMatch) { try verifier.verify(header: good, body: Self.body + [0x20], now: Self.now) }
        #expect(throws: StripeSignature.Refusal.noMatch) {
            try verifier.verify(header: "t=\(t),v0=\(Self.v1("whsec_old_secret_value", t, Self.body))", body: Self.body, now: Self.now)
        }
        #expect(throws: StripeSignature.Refusal.outsideTolerance(seconds: 301)) {
            try verifier.verify(header: good, body: Self.body, now: Self.now.addingTimeInterval(301))
        }
        #expect(throws: StripeSignature.Refusal.outsideTolerance(seconds: -400)) {
            try verifier.verify(header: good, body: Self.body, now: Self.now.addingTimeInterval(-400))
        }
        #expect(throws: Never.self) { try verifier.verify(header: good, body: Self.body, now: Self.now.addingTimeInterval(300)) }
    }

    @Test("a signature beyond the tolerance is said to be old (ago) or early (in the future) the right way round")
    func toleranceMessages() throws {
        let t = Int64(Self.now.timeIntervalSince1970)
        let good = "t=\(t),v1=\(Self.v1("whsec_old_secret_value", t, Self.body))"
        func message(at now: Date) -> String? {
            do {
                _ = try verifier.verify(header: good, body: Self.body, now: now)
                return nil
            } catch {
                return verifier.message(for: error)
            }
        }
        #expect(message(at: Self.now.addingTimeInterval(301)) == "signed 301 s ago, beyond the tolerance of 300 s")
        #expect(message(at: Self.now.addingTimeInterval(-301)) == "signed 301 s in the future, beyond the tolerance of 300 s")
    }

    @Test("a missing or malformed header is malformed, not a failed signature")
    func malformed() {
        for header in [nil, "", "v1=abc", "t=soon,v1=ab", "t=1,t=2,v1=ab", "garbage", String(repeating: "t=1,", count: 2000)] as [String?] {
            #expect(throws: (any Error).self, "\(header?.prefix(40) ?? "nil")") {
                try verifier.verify(header: header, body: Self.body, now: Self.now)
            }
            do {
                _ = try verifier.verify(header: header, body: Self.body, now: Self.now)
            } catch {
                guard case .malformedHeader = error else {
                    Issue.record("\(header?.prefix(40) ?? "nil"): \(error)")
                    continue
                }
            }
        }
    }

    @Test("Stripe's official Python library accepts our header, and we accept its signature")
    func officialLibrary() async throws {
        guard let python = ProcessInfo.processInfo.environment["STOREKEEPER_TEST_STRIPE_PYTHON"] else {
            print("skipped: Stripe's Python library is not installed (scripts/test installs it from PyPI)")
            return
        }
        let t = Int64(Date().timeIntervalSince1970)
        let body = String(decoding: Self.body, as: UTF8.self)
        let ours = StripeSignature(secrets: ["whsec_new_secret_value"]).header(body: Self.body, timestamp: t)
        let script = """
            import stripe, sys, time
            payload, header, t = sys.argv[1], sys.argv[2], int(sys.argv[3])
            event = stripe.Webhook.construct_event(payload, header, "whsec_new_secret_value")
            print(event["id"])
            print(stripe.WebhookSignature._compute_signature(f"{t}.{payload}", "whsec_old_secret_value"))
            """
        let process = Process()
        process.executableURL = URL(fileURLWithPath: python)
        process.arguments = ["-c", script, body, ours, String(t)]
        let output = Pipe()
        process.standardOutput = output
        process.standardError = output
        try process.run()
        process.waitUntilExit()
        let lines = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self).split(separator: "\n").map(String.init)
        #expect(process.terminationStatus == 0, "\(lines)")
        #expect(lines.first == "evt_1", "\(lines)")
        let theirs = try #require(lines.last)
        #expect(try verifier.verify(header: "t=\(t),v1=\(theirs)", body: Self.body, now: Date()) == Date(timeIntervalSince1970: Double(t)))
    }
}
