import Foundation
import HTTPTypes
import HummingbirdTesting
import NIOCore
import Testing

@testable import IntegrationSupport

/// `POST /v1/accounts/{id}/usage/{idempotencyKey}/reverse` through the HTTP API on real PostgreSQL, judged by what the
/// customer sees (the status's `remaining`) and the contract (issue 53, docs/credits.md "Giving a spend back"): once,
/// within 24 hours, by the rule a released hold follows.
@Suite("Giving a spend back: once, within its window, where its credits can go")
struct SpendReversalTests {
    static func spend(_ client: any TestClientProtocol, _ account: String, _ meter: String, _ amount: Int, key: String) async throws -> TestResponse {
        try await CreditHoldTests.post(
            client, "/v1/accounts/\(account)/usage", #"{"meter": "\#(meter)", "amount": \#(amount), "idempotencyKey": "\#(key)"}"#)
    }

    static func reverse(_ client: any TestClientProtocol, _ account: String, key: String) async throws -> TestResponse {
        try await CreditHoldTests.post(client, "/v1/accounts/\(account)/usage/\(key)/reverse", "")
    }

    @Test(
        "a spend of 4 given back: 4 return, a repeat answers the first and returns nothing more; a refused spend is 409 not_spent; no spend is 404; a day later is 409"
    )
    func once() async throws {
        let clock = ShiftedClock()
        try await StorekeeperHarness.run(worker: false, environment: CreditHoldTests.environment, clock: { clock.now }) { harness in
            try await harness.withHTTP { client in
                let account = "reverser-\(UUID().uuidString.prefix(8).lowercased())"
                try await CreditHoldTests.topUp(client, account, "exports", 7)
                #expect(try await CreditHoldTests.remaining(client, account, "exports") == 10, "the free month's 3 and 7 topped up")
                #expect(try await Self.spend(client, account, "exports", 4, key: "job/1").status == .ok)
                #expect(try await CreditHoldTests.remaining(client, account, "exports") == 6)
                for _ in 0..<2 {
                    let reversed = try await Self.reverse(client, account, key: "job%2F1")
                    #expect(reversed.status == .ok, "\(String(buffer: reversed.body))")
                    let reversal = try reversed.answer(SpendReversalAnswer.self)
                    #expect(reversal.returned == 4 && reversal.lapsed == 0 && reversal.amount == 4)
                    #expect(try await CreditHoldTests.remaining(client, account, "exports") == 10, "given back once")
                }
                #expect(try await Self.spend(client, account, "exports", 50, key: "big").status.code == 402)
                let refused = try await Self.reverse(client, account, key: "big")
                #expect(try refused.status == .conflict && refused.answer(ErrorAnswer.self).error == "not_spent", "\(String(buffer: refused.body))")
                let unknown = try await Self.reverse(client, account, key: "never")
                #expect(try unknown.status == .notFound && unknown.answer(ErrorAnswer.self).error == "not_found")
                #expect(try await Self.spend(client, account, "exports", 2, key: "late").status == .ok)
                clock.set(Date().addingTimeInterval(86_400 + 60))
                let late = try await Self.reverse(client, account, key: "late")
                #expect(
                    try late.status == .conflict && late.answer(ErrorAnswer.self).error == "reversal_window_passed", "\(String(buffer: late.body))")
                #expect(
                    try await harness.count("SELECT count(*) FROM credit_ledger WHERE reason = 'usage reversed'") == 2,
                    "one row for each bucket it took from")
            }
        }
    }

    @Test("a spend of the day's credits given back the next day: they lapse with their day; the top-up's part comes back")
    func closedBucketLapses() async throws {
        let clock = ShiftedClock()
        try await StorekeeperHarness.run(worker: false, environment: CreditHoldTests.environment, clock: { clock.now }) { harness in
            try await harness.withHTTP { client in
                let account = "lapse-reverser-\(UUID().uuidString.prefix(8).lowercased())"
                try await CreditHoldTests.topUp(client, account, "ai_requests", 2)
                // Late in a UTC day, so that the next day is an hour on, well within the window.
                let lateToday = (Date().timeIntervalSince1970 / 86_400).rounded(.down) * 86_400 + 86_400 - 1_800
                clock.set(Date(timeIntervalSince1970: lateToday))
                #expect(try await Self.spend(client, account, "ai_requests", 6, key: "g").status == .ok, "the day's 5 and 1 of the top-up")
                clock.set(Date(timeIntervalSince1970: lateToday + 3_600))
                let reversed = try await Self.reverse(client, account, key: "g")
                #expect(reversed.status == .ok, "\(String(buffer: reversed.body))")
                let reversal = try reversed.answer(SpendReversalAnswer.self)
                #expect(reversal.returned == 1 && reversal.lapsed == 5, "\(String(buffer: reversed.body))")
                #expect(try await CreditHoldTests.remaining(client, account, "ai_requests") == 7, "the new day's 5 and both top-up credits")
            }
        }
    }
}
