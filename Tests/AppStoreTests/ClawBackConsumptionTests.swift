import AppStoreModels
import Foundation
import HummingbirdTesting
import LocalSigning
import TestSupport
import Testing

@testable import IntegrationSupport

/// What Apple is told of a pack when the customer asks for its refund, after a claw-back took the pack's credits and
/// gave them back. A claw-back (an earlier period refunded at a percentage, docs/credits.md) takes from the top-ups when
/// the window is spent; Apple's REFUND_REVERSED gives it back. The pack was never used, so its consumption is 0 % —
/// expectations from what the customer did, checked on the body the fake Apple received (Send Consumption Information).
@Suite("A claw-back given back is not a pack's use, in the answer to Apple")
struct ClawBackConsumptionTests {
    @Test(
        "this month spent, a pack of 100 bought; last month refunded at 50 % (the claw-back takes the pack's 100), the refund reversed: Apple hears 0 % used; 30 spent after: 30 %"
    )
    func reversedClawBack() async throws {
        try await FakeApple.run { apple in
            try await apple.harness(extra: RefundDefenceTests.apiPolicy) { harness in
                try await harness.withHTTP { client in
                    let account = UUID()
                    #expect(try await client.withKey(.put, "/v1/accounts/\(account)/consent", #"{"consented": true}"#).status == .ok)
                    var flow = LifecycleFlow(harness: harness, client: client, account: account)
                    let now = Int64(Date().timeIntervalSince1970 * 1000)
                    let (lastMonth, _) = try await flow.sendLastAndThisMonth(now: now)
                    // Everything but the pack: the day's free credits and this month's.
                    let before = try await Self.remaining(client, account)
                    #expect(try await client.spend(account, amount: before, key: "month").status == .ok)

                    let pack = try await RefundDefenceTests.buyPack("7200001", for: account, signedDate: now - 60_000, through: flow, knownTo: apple)
                    #expect(try await Self.remaining(client, account) == 100)

                    // Half of last month's credits are owed: the window has none, so the claw-back takes the pack's 100.
                    let lastMonthsTransaction = try #require(lastMonth.transaction)
                    try await flow.sendProratedRefund(of: lastMonthsTransaction)
                    #expect(try await Self.remaining(client, account) == 0)
                    try await flow.sendProratedRefund(of: lastMonthsTransaction, reversed: true)
                    #expect(try await Self.remaining(client, account) == 100)

                    try await flow.post(RefundDefenceTests.consumptionRequest(pack, signedDate: now), notificationUUID: UUID())
                    try await eventually("the answer to reach Apple") { RefundDefenceTests.answers(apple).count == 1 }
                    #expect(RefundDefenceTests.answers(apple).first?["consumptionPercentage"] as? Int == 0, "\(RefundDefenceTests.answers(apple))")

                    // Used after all: 30 of the pack's 100.
                    #expect(try await client.spend(account, amount: 30, key: "after").status == .ok)
                    try await flow.post(RefundDefenceTests.consumptionRequest(pack, signedDate: now + 1000), notificationUUID: UUID())
                    try await eventually("the second answer to reach Apple") { RefundDefenceTests.answers(apple).count == 2 }
                    #expect(RefundDefenceTests.answers(apple).last?["consumptionPercentage"] as? Int == 30_000)
                }
            }
        }
    }

    static func remaining(_ client: any TestClientProtocol, _ account: UUID) async throws -> Int64 {
        let status = try await client.getWithKey("/v1/accounts/\(account)/status")
        return try status.answer(StatusAnswer.self).credits["ai_requests"]?.remaining ?? -1
    }
}
