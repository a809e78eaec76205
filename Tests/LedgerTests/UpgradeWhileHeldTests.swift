import AppStoreModels
import Foundation
import HummingbirdTesting
import LocalSigning
import Testing

@testable import IntegrationSupport

/// The customer upgrades Pro → Max while every credit left of Pro's month is out: the last of it held for a
/// generation, some spent on a lookup that failed (docs/credits.md, "Where credits go back"). The expectations are the
/// customer's, worked by hand: under `upgrade_credits: prorate` Pro's unused credits move to the top-ups, so once the
/// generation ends and the lookup is given back the top-ups hold Pro's 1,000 less what the generation cost — whether the
/// upgrade reached the server before the hold ended or after. (Before, with nothing left in the window at the switch,
/// no carry-over was made and the credits coming back lapsed.)
@Suite("Upgrades: Pro's credits out at the switch follow the carry-over, in either order")
struct UpgradeWhileHeldTests {
    enum Order: CaseIterable { case upgradeWhileHeld, upgradeAfter }
    enum Refunded: String, CaseIterable {
        case heldUntilAfter = "the hold ended after the refund", heldUntilBefore = "before the refund", heldUntilUpgrade = "before the upgrade"
    }

    @Test(
        "100 spent and the rest of Pro's window held; released, or settled for 300 or all; the upgrade to Max before or after, then the spend given back: the top-ups hold 1,000 less the charge",
        arguments: [Int64(0), 300, -1])
    func eitherOrder(charge: Int64) async throws {
        try await StorekeeperHarness.run(environment: CreditHoldTests.environment) { harness in
            try await harness.withHTTP { client in
                for order in Order.allCases {
                    let account = UUID()
                    let id = account.uuidString.lowercased()
                    var flow = LifecycleFlow(harness: harness, client: client, account: account)
                    try await flow.send(.subscribe)
                    let bought = try #require(try await CreditHoldTests.credits(client, id, "ai_requests"))
                    #expect(bought.cycle == 1000 && bought.topUp == 0, "Pro's month: \(bought)")
                    #expect(try await client.spend(account, amount: 100, key: "lookup").status == .ok)
                    let left = try #require(try await CreditHoldTests.remaining(client, id, "ai_requests"))
                    let held = try await CreditHoldTests.hold(client, id, "ai_requests", Int(left), key: "generation")
                    #expect(held.status == .created, "\(String(buffer: held.body))")
                    let hold = try held.answer(CreditHoldAnswer.self).id
                    #expect(try await CreditHoldTests.credits(client, id, "ai_requests")?.cycle == 0, "\(order): all of Pro's window is out")
                    let cost = charge < 0 ? left : charge
                    func end() async throws {
                        let ended = try await CreditHoldTests.end(client, hold: hold, charge: cost)
                        #expect(ended.status == .ok, "\(order): \(String(buffer: ended.body))")
                    }
                    if order == .upgradeAfter { try await end() }
                    try await flow.send(.upgrade, target: "max.monthly")
                    if order == .upgradeWhileHeld { try await end() }
                    let givenBack = try await CreditHoldTests.post(client, "/v1/accounts/\(id)/usage/lookup/reverse", "")
                    #expect(givenBack.status == .ok, "\(String(buffer: givenBack.body))")
                    let after = try #require(try await CreditHoldTests.credits(client, id, "ai_requests"))
                    // By hand: Pro's 1,000, less what the generation cost (the lookup came back; the day's free credits
                    // it took went back to the day).
                    #expect(after.topUp == 1000 - cost, "\(order), charged \(cost): \(after)")
                    #expect(after.held == 0)
                    #expect(
                        try await harness.count("SELECT count(*) FROM (SELECT bucket FROM credit_ledger GROUP BY bucket HAVING sum(delta) < 0) AS b")
                            == 0)
                }
            }
        }
    }

    @Test(
        "the upgrade refunded by Apple: the top-ups keep none of Pro's credits, whether the hold ended before the upgrade, before the refund or after it",
        arguments: [Int64(0), 300])
    func upgradeRefunded(charge: Int64) async throws {
        try await StorekeeperHarness.run(environment: CreditHoldTests.environment) { harness in
            try await harness.withHTTP { client in
                for order in Refunded.allCases {
                    let account = UUID()
                    let id = account.uuidString.lowercased()
                    let (started, hold) = try await Self.allOutOfProsWindow(harness, client, account: account)
                    var flow = started
                    func end() async throws {
                        let ended = try await CreditHoldTests.end(client, hold: hold, charge: charge)
                        #expect(ended.status == .ok, "\(order.rawValue): \(String(buffer: ended.body))")
                    }
                    if order == .heldUntilUpgrade { try await end() }
                    try await flow.send(.upgrade, target: "max.monthly")
                    if order == .heldUntilBefore { try await end() }
                    // Apple's REFUND of the upgrade's transaction (the period in force), in full.
                    try await flow.send(.refund)
                    if order == .heldUntilAfter { try await end() }
                    let after = try #require(try await CreditHoldTests.credits(client, id, "ai_requests"))
                    // By hand: the customer keeps neither the upgrade nor what it carried of Pro's window.
                    #expect(after.topUp == 0, "\(order.rawValue), charged \(charge): \(after)")
                    #expect(after.held == 0)
                    #expect(
                        try await harness.count("SELECT count(*) FROM (SELECT bucket FROM credit_ledger GROUP BY bucket HAVING sum(delta) < 0) AS b")
                            == 0)
                }
            }
        }
    }

    /// Pro bought, 100 spent on a lookup that failed (key `lookup`) and all that is left of the window held for a
    /// generation (key `generation`): the flow to go on with and the hold's id.
    static func allOutOfProsWindow(_ harness: StorekeeperHarness, _ client: any TestClientProtocol, account: UUID) async throws -> (
        LifecycleFlow, String
    ) {
        let id = account.uuidString.lowercased()
        var flow = LifecycleFlow(harness: harness, client: client, account: account)
        try await flow.send(.subscribe)
        #expect(try await client.spend(account, amount: 100, key: "lookup").status == .ok)
        let left = try #require(try await CreditHoldTests.remaining(client, id, "ai_requests"))
        let held = try await CreditHoldTests.hold(client, id, "ai_requests", Int(left), key: "generation")
        #expect(held.status == .created, "\(String(buffer: held.body))")
        return (flow, try held.answer(CreditHoldAnswer.self).id)
    }
}
