import AppStoreModels
import Foundation
import HummingbirdTesting
import LocalSigning
import Testing

@testable import IntegrationSupport

/// The customer upgrades Pro → Max while every credit left of Pro's month is out (a generation held, a lookup spent
/// that failed); Apple refunds the upgrade, then reverses the refund (`REFUND_REVERSED` of the upgrade's transaction).
/// The expectation is the customer's, worked by hand from docs/credits.md ("Where credits go back", upgrades): a
/// reversed refund is as if there had been none, so once the generation ends and the lookup is given back, the
/// top-ups hold Pro's 1,000 less what the generation cost — whenever the two came back: before the upgrade, before the
/// refund, while the refund stood, or after its reversal. (Until sql/0064 the customer lost what came back after the
/// refund, and once it was reversed too: the refund ended the carry for good.)
@Suite("Upgrades: a refund of the upgrade reversed while Pro's credits are out ends as if never refunded")
struct UpgradeRefundReversedWhileHeldTests {
    enum Ending: String, CaseIterable {
        case beforeUpgrade = "the hold ended before the upgrade", beforeRefund = "before the refund"
        case whileRefunded = "while the refund stood", afterReversal = "after the refund's reversal"
    }

    @Test(
        "100 spent and the rest of Pro's window held; released or settled for 300; the upgrade to Max refunded and the refund reversed, the hold ending and the spend given back at any point: the top-ups hold 1,000 less the charge",
        arguments: [Int64(0), 300])
    func refundOfTheUpgradeReversed(charge: Int64) async throws {
        try await StorekeeperHarness.run(environment: CreditHoldTests.environment) { harness in
            try await harness.withHTTP { client in
                for ending in Ending.allCases {
                    let account = UUID()
                    let id = account.uuidString.lowercased()
                    let (started, hold) = try await UpgradeWhileHeldTests.allOutOfProsWindow(harness, client, account: account)
                    var flow = started
                    // The generation ends and the lookup is given back at the same point of the story.
                    func end() async throws {
                        let ended = try await CreditHoldTests.end(client, hold: hold, charge: charge)
                        #expect(ended.status == .ok, "\(ending.rawValue): \(String(buffer: ended.body))")
                        let givenBack = try await CreditHoldTests.post(client, "/v1/accounts/\(id)/usage/lookup/reverse", "")
                        #expect(givenBack.status == .ok, "\(ending.rawValue): \(String(buffer: givenBack.body))")
                    }
                    if ending == .beforeUpgrade { try await end() }
                    let upgrade = try await flow.send(.upgrade, target: "max.monthly")
                    let maxMonth = try await CreditHoldTests.credits(client, id, "ai_requests")?.cycle
                    if ending == .beforeRefund { try await end() }
                    // Apple's REFUND of the upgrade's transaction (the period in force), in full.
                    let refund = try await flow.send(.refund)
                    #expect(try await CreditHoldTests.credits(client, id, "ai_requests")?.topUp ?? 0 == 0, "\(ending.rawValue): refunded")
                    if ending == .whileRefunded {
                        try await end()
                        // What came back while the refund stands is the refund's: none of it in the top-ups yet.
                        #expect(try await CreditHoldTests.credits(client, id, "ai_requests")?.topUp ?? 0 == 0, "taken while the refund stands")
                    }
                    try await flow.sendReversal(of: refund, renewalInfo: upgrade.renewalInfo)
                    if ending == .afterReversal { try await end() }
                    let after = try #require(try await CreditHoldTests.credits(client, id, "ai_requests"))
                    // By hand: Pro's 1,000 carried to the top-ups, less what the generation cost; Max's month beside.
                    #expect(after.topUp == 1000 - charge, "\(ending.rawValue), charged \(charge): \(after)")
                    #expect(
                        after.cycle != nil && after.cycle == maxMonth, "\(ending.rawValue): Max's month as granted, \(String(describing: maxMonth))")
                    #expect(after.held == 0)
                    #expect(
                        try await harness.count("SELECT count(*) FROM (SELECT bucket FROM credit_ledger GROUP BY bucket HAVING sum(delta) < 0) AS b")
                            == 0)
                }
                let (replayed, output) = try await TestProcess.run(
                    "storekeeper", ["replay", "--all"], environment: ["DATABASE_URL": harness.databaseURL.urlString])
                #expect(replayed == 0 && !output.contains("differs"), "\(output)")
            }
        }
    }
}
