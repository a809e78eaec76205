import AppStoreModels
import Foundation
import HummingbirdTesting
import LocalSigning
import Testing

@testable import IntegrationSupport

/// Apple reverses a refund (REFUND_REVERSED) after the customer upgraded: the month was paid for after all, so the
/// customer ends as if it had never been refunded — or as if the reversal had come before the upgrade. The expectations
/// are the customer's, worked by hand from docs/credits.md ("Upgrades", `upgrade_credits: prorate`): Pro's 1,000 a
/// month, 100 spent, a generation of 300 perhaps held and released at the end; the upgrade to Max grants Max's 1,500
/// and moves what is left of Pro's month to the top-ups — 900, the held 300 following once released.
@Suite("A refund reversed after an upgrade ends as if never refunded")
struct RefundReversedAfterUpgradeTests {
    enum Path: String, CaseIterable {
        case neverRefunded = "never refunded"
        case reversedBeforeUpgrade = "refunded and reversed before the upgrade"
        case reversedAfterUpgrade = "refunded before the upgrade, reversed after it"
    }

    @Test(
        "Pro's month less 100 spent ends in the top-ups (900) beside Max's 1,500, whichever path, with 300 held over the events or not",
        arguments: Path.allCases, [false, true])
    func sameEnd(_ path: Path, holding: Bool) async throws {
        try await StorekeeperHarness.run(environment: CreditHoldTests.environment) { harness in
            try await harness.withHTTP { client in
                let account = UUID()
                let id = account.uuidString.lowercased()
                var flow = LifecycleFlow(harness: harness, client: client, account: account)
                try await flow.send(.subscribe)
                #expect(try await client.spend(account, amount: 100, key: "lookup").status == .ok)
                var hold: String?
                if holding {
                    let held = try await CreditHoldTests.hold(client, id, "ai_requests", 300, key: "generation")
                    #expect(held.status == .created, "\(String(buffer: held.body))")
                    hold = try held.answer(CreditHoldAnswer.self).id
                }
                var refunded: SimulatedEvent?
                if path != .neverRefunded {
                    refunded = try await flow.send(.refund)
                    // The refunded month's window is gone while the refund stands.
                    #expect(try await CreditHoldTests.credits(client, id, "ai_requests")?.cycle == nil, "\(path): after the refund")
                }
                if path == .reversedBeforeUpgrade {
                    try await flow.send(.refund, LifecycleFlow.reversingTheRefund)
                }
                let upgrade = try await flow.send(.upgrade, target: "max.monthly")
                if path == .reversedAfterUpgrade, let refunded {
                    // Apple's REFUND_REVERSED of Pro's transaction, signed after the upgrade, with Max's renewal info.
                    try await flow.sendReversal(of: refunded, renewalInfo: upgrade.renewalInfo)
                }
                if let hold {
                    let ended = try await CreditHoldTests.end(client, hold: hold, charge: 0)
                    #expect(ended.status == .ok, "\(path): \(String(buffer: ended.body))")
                }
                let credits = try #require(try await CreditHoldTests.credits(client, id, "ai_requests"))
                #expect(
                    credits.cycle == 1500 && credits.topUp == 900 && credits.remaining == 2400 && credits.held == 0,
                    "\(path), held \(holding): \(credits)")
                #expect(try await flow.status()["state"] as? String == "subscribed")
                let belowZero = "SELECT count(*) FROM (SELECT bucket FROM credit_ledger GROUP BY bucket HAVING sum(delta) < 0) AS b"
                #expect(try await harness.count(belowZero) == 0, "\(path): a bucket went below zero")
                let (replayed, output) = try await TestProcess.run(
                    "storekeeper", ["replay", "--all"], environment: ["DATABASE_URL": harness.databaseURL.urlString])
                #expect(replayed == 0 && !output.contains("differs"), "\(path): \(output)")
            }
        }
    }
}
