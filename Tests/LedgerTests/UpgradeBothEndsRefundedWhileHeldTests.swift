import AppStoreModels
import Foundation
import HummingbirdTesting
import LocalSigning
import Testing

@testable import IntegrationSupport

/// The customer upgrades Pro → Max while every credit left of Pro's month is out (a generation held, a lookup spent
/// that failed); Apple then refunds both ends of the upgrade's carry-over — Pro's month (the transaction upgraded from)
/// and the upgrade's — and later reverses both refunds. The expectation is the customer's, worked by hand from
/// docs/credits.md (upgrades: "a customer refunded either keeps neither"): none of Pro's credits in the top-ups while
/// either refund stands, whenever the work came back; Pro's 1,000 less what the generation cost once both are reversed.
/// (Until 2026-12-05 a generation that ended between the two refunds left a claim the second refund should not have
/// made, and one that ended after both was the second refund's to take, so reversing it first gave the credits back
/// while Pro's refund still stood.)
@Suite("Upgrades: both ends of the carry refunded while Pro's credits are out, then both refunds reversed")
struct UpgradeBothEndsRefundedWhileHeldTests {
    enum Ending: String, CaseIterable {
        case betweenRefunds = "the hold ended between the refunds", afterRefunds = "after both refunds"
        case betweenReversals = "between the reversals"
    }

    @Test(
        "100 spent and the rest of Pro's window held (released or settled for 300), or 300 of it held (settled for 100); Pro's month then the upgrade refunded, the reversals in either order, the hold ending and the spend given back between the refunds, after them or between the reversals",
        arguments: [(Int64(900), Int64(0)), (900, 300), (300, 100)])
    func bothEnds(held amount: Int64, charge: Int64) async throws {
        try await StorekeeperHarness.run(environment: CreditHoldTests.environment) { harness in
            try await harness.withHTTP { client in
                for ending in Ending.allCases {
                    for upgradeReversedFirst in [true, false] {
                        let label = "\(ending.rawValue), the \(upgradeReversedFirst ? "upgrade's" : "Pro month's") refund reversed first"
                        let account = UUID()
                        let id = account.uuidString.lowercased()
                        var flow = LifecycleFlow(harness: harness, client: client, account: account)
                        let subscribed = try await flow.send(.subscribe)
                        #expect(try await client.spend(account, amount: 100, key: "lookup").status == .ok)
                        let held = try await CreditHoldTests.hold(client, id, "ai_requests", Int(amount), key: "generation")
                        #expect(held.status == .created, "\(String(buffer: held.body))")
                        let hold = try held.answer(CreditHoldAnswer.self).id
                        func topUp() async throws -> Int64 { try await CreditHoldTests.credits(client, id, "ai_requests")?.topUp ?? 0 }
                        func end() async throws {
                            let ended = try await CreditHoldTests.end(client, hold: hold, charge: charge)
                            #expect(ended.status == .ok, "\(label): \(String(buffer: ended.body))")
                            let givenBack = try await CreditHoldTests.post(client, "/v1/accounts/\(id)/usage/lookup/reverse", "")
                            #expect(givenBack.status == .ok, "\(label): \(String(buffer: givenBack.body))")
                            #expect(try await topUp() == 0, "\(label): a refund stands, what came back is its")
                        }
                        let upgrade = try await flow.send(.upgrade, target: "max.monthly")
                        // Apple's REFUND of Pro's transaction, with Max's renewal info; then of the upgrade's.
                        let proRefund = try await flow.sendRefund(of: subscribed, renewalInfo: upgrade.renewalInfo)
                        if ending == .betweenRefunds { try await end() }
                        let maxRefund = try await flow.send(.refund)
                        #expect(try await topUp() == 0, "\(label): both refunded")
                        if ending == .afterRefunds { try await end() }
                        if upgradeReversedFirst {
                            try await flow.sendReversal(of: maxRefund, renewalInfo: upgrade.renewalInfo)
                        } else {
                            // The subscription stays revoked: Max's refund stands.
                            try await flow.sendReversal(of: proRefund, renewalInfo: maxRefund.renewalInfo) { event in
                                event.status = 5
                                event.renewalInfo?.autoRenewStatus = 0
                            }
                        }
                        // By hand: one refund still stands, so none of Pro's credits are the customer's.
                        #expect(try await topUp() == 0, "\(label): one reversed, the other stands")
                        if ending == .betweenReversals { try await end() }
                        if upgradeReversedFirst {
                            try await flow.sendReversal(of: proRefund, renewalInfo: upgrade.renewalInfo)
                        } else {
                            try await flow.sendReversal(of: maxRefund, renewalInfo: upgrade.renewalInfo)
                        }
                        let after = try #require(try await CreditHoldTests.credits(client, id, "ai_requests"))
                        // By hand: neither refund stands, Pro's 1,000 carried to the top-ups, less what the generation cost.
                        #expect(after.topUp == 1000 - charge, "\(label), \(amount) held, charged \(charge): \(after)")
                        #expect(after.held == 0, "\(label)")
                        #expect(
                            try await harness.count(
                                "SELECT count(*) FROM (SELECT bucket FROM credit_ledger GROUP BY bucket HAVING sum(delta) < 0) AS b") == 0,
                            "\(label): a bucket below zero")
                    }
                }
                let (replayed, output) = try await TestProcess.run(
                    "storekeeper", ["replay", "--all"], environment: ["DATABASE_URL": harness.databaseURL.urlString])
                #expect(replayed == 0 && !output.contains("differs"), "\(output)")
            }
        }
    }
}
