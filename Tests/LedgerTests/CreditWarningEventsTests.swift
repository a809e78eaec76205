import Foundation
import HTTPTypes
import HummingbirdTesting
import NIOCore
import TestSupport
import Testing

@testable import IntegrationSupport

/// `warn_at` on real PostgreSQL, read as the app reads it: the events feed (`GET /v1/events?types=credits.*`). A meter
/// with `warn_at: [0.2, 0]` tells `credits.low` when a spend or a hold takes the remaining to a fifth of the allowance
/// and `credits.exhausted` at 0, each once per window, however the balance goes up and down in between (issue 53).
@Suite("Credit warnings: credits.low and credits.exhausted, once per window")
struct CreditWarningEventsTests {
    /// The repository's catalogue with thresholds on both meters: a share and 0 on `ai_requests`, 2 credits on `exports`.
    static func tiers() throws -> URL {
        var text = try String(contentsOf: AppleSamples.repository.appendingPathComponent("config/tiers.yml"), encoding: .utf8)
        text = text.replacingOccurrences(of: "  - id: ai_requests\n", with: "  - id: ai_requests\n    warn_at: [0.2, 0]\n")
        text = text.replacingOccurrences(of: "  - id: exports\n", with: "  - id: exports\n    warn_at: [2]\n")
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("tiers-warn-\(UUID().uuidString).yml")
        try text.write(to: file, atomically: true, encoding: .utf8)
        return file
    }

    /// Waits until the feed says `wanted`: it hands out an event once every transaction older than it has ended, and
    /// other tests' transactions on the cluster may still be running.
    static func expectWarnings(_ client: any TestClientProtocol, _ account: String, _ wanted: [String]) async throws {
        var last: [String] = []
        do {
            try await eventually(timeout: .seconds(20), "the feed's warnings") {
                last = try await warnings(client, account)
                return last == wanted
            }
        } catch {
            Issue.record("the feed says \(last), wanted \(wanted)")
        }
    }

    /// The app's view: each `credits.*` warning in the feed as (type, meter, remaining, threshold).
    static func warnings(_ client: any TestClientProtocol, _ account: String) async throws -> [String] {
        let response = try await client.execute(
            uri: "/v1/events?types=credits.low,credits.exhausted&limit=1000", method: .get, headers: CreditHoldTests.service)
        #expect(response.status == .ok, "\(String(buffer: response.body))")
        let events = try response.answer(CreditWarningFeedAnswer.self).events
        return events.filter { $0.data.accountId == account }.map { event in
            let change = event.data.change
            return "\(event.type) \(change.meter) \(change.remaining) \(change.threshold)"
        }
    }

    @Test(
        "spending the day's 5 one by one: low at 1 left, exhausted at 0; the next day a hold of 4 warns again, a release and a second hold do not, the last credit spent is exhausted"
    )
    func onceAWindow() async throws {
        let clock = ShiftedClock()
        let tiers = try Self.tiers()
        defer { try? FileManager.default.removeItem(at: tiers) }
        var environment = CreditHoldTests.environment
        environment["STOREKEEPER_TIERS"] = tiers.path
        try await StorekeeperHarness.run(worker: false, environment: environment, clock: { clock.now }) { harness in
            try await harness.withHTTP { client in
                let account = "warned-\(UUID().uuidString.prefix(8).lowercased())"
                // Early in a UTC day, so that every step stays in it.
                let today = (Date().timeIntervalSince1970 / 86_400).rounded(.down) * 86_400 + 3_600
                clock.set(Date(timeIntervalSince1970: today))
                for index in 0..<5 {
                    #expect(try await SpendReversalTests.spend(client, account, "ai_requests", 1, key: "s\(index)").status == .ok)
                }
                #expect(try await SpendReversalTests.spend(client, account, "ai_requests", 1, key: "over").status.code == 402)
                try await Self.expectWarnings(client, account, ["credits.low ai_requests 1 1", "credits.exhausted ai_requests 0 0"])

                clock.set(Date(timeIntervalSince1970: today + 86_400))
                let first = try await CreditHoldTests.hold(client, account, "ai_requests", 4, key: "h1")
                #expect(first.status == .created, "\(String(buffer: first.body))")
                let id = try first.answer(CreditHoldAnswer.self).id
                #expect(try await CreditHoldTests.post(client, "/v1/holds/\(id)/release", "").status == .ok)
                #expect(try await CreditHoldTests.remaining(client, account, "ai_requests") == 5)
                #expect(try await CreditHoldTests.hold(client, account, "ai_requests", 4, key: "h2").status == .created)
                #expect(try await SpendReversalTests.spend(client, account, "ai_requests", 1, key: "last").status == .ok)
                let twoDays = [
                    "credits.low ai_requests 1 1", "credits.exhausted ai_requests 0 0", "credits.low ai_requests 1 1",
                    "credits.exhausted ai_requests 0 0",
                ]
                try await Self.expectWarnings(client, account, twoDays)

                // An absolute threshold on the free month's 3 exports: crossed by one spend of 2, told once.
                #expect(try await SpendReversalTests.spend(client, account, "exports", 2, key: "e1").status == .ok)
                #expect(try await SpendReversalTests.spend(client, account, "exports", 1, key: "e2").status == .ok)
                try await Self.expectWarnings(client, account, twoDays + ["credits.low exports 1 2"])
                #expect(try await harness.count("SELECT count(*) FROM events WHERE type IN ('credits.low', 'credits.exhausted')") == 5)
            }
        }
    }
}
