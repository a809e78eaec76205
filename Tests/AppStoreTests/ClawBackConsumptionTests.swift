import AppStoreModels
import Foundation
import HTTPTypes
import HummingbirdTesting
import LocalSigning
import NIOCore
import TestSupport
import Testing

@testable import IntegrationSupport

/// What Apple is told of a pack when the customer asks for its refund, after a claw-back took the pack's credits and
/// gave them back. A claw-back (an earlier period refunded at a percentage, docs/credits.md) takes from the top-ups when
/// the window is spent, and claims what is held there; Apple's REFUND_REVERSED gives it back. Expectations from what the
/// customer's work used of the pack, checked on the body the fake Apple received (Send Consumption Information).
@Suite("A claw-back given back is not a pack's use, in the answer to Apple")
struct ClawBackConsumptionTests {
    @Test(
        "this month spent, a pack of 100 bought; last month refunded at 50 % (the claw-back takes the pack's 100), the refund reversed: Apple hears 0 % used; 30 spent after: 30 %"
    )
    func reversedClawBack() async throws {
        try await Self.afterAPack { flow, apple, account, lastMonth, pack in
            // Half of last month's credits are owed: the window has none, so the claw-back takes the pack's 100.
            try await flow.sendProratedRefund(of: lastMonth)
            #expect(try await Self.remaining(flow.client, account) == 0)
            try await flow.sendProratedRefund(of: lastMonth, reversed: true)
            #expect(try await Self.remaining(flow.client, account) == 100)
            #expect(try await Self.consumption(of: pack, asked: 1, flow: flow, apple: apple) == 0)
            // Used after all: 30 of the pack's 100.
            #expect(try await flow.client.spend(account, amount: 30, key: "after").status == .ok)
            #expect(try await Self.consumption(of: pack, asked: 2, flow: flow, apple: apple) == 30_000)
        }
    }

    @Test(
        "30 of the pack held for a model call when last month is refunded at 50 % (the claw-back takes the 70 there and claims the held 30), the hold settled for 30 or released, the refund reversed: Apple hears what the work used, 30 % or 0 %",
        arguments: [Int64(30), 0])
    func heldWhileClawedBack(charge: Int64) async throws {
        try await Self.afterAPack { flow, apple, account, lastMonth, pack in
            let hold = try await Self.hold(30, for: account, client: flow.client)
            try await flow.sendProratedRefund(of: lastMonth)
            #expect(try await Self.remaining(flow.client, account) == 0)
            let ended =
                charge > 0
                ? try await Self.post(flow.client, "/v1/holds/\(hold)/settle", #"{"amount": \#(charge)}"#)
                : try await Self.post(flow.client, "/v1/holds/\(hold)/release", "")
            #expect(ended.status == .ok, "\(String(buffer: ended.body))")
            // Released, the 30 paid the claim: nothing left until the refund is reversed.
            #expect(try await Self.remaining(flow.client, account) == 0)
            try await flow.sendProratedRefund(of: lastMonth, reversed: true)
            #expect(try await Self.remaining(flow.client, account) == 100 - charge)
            #expect(try await Self.consumption(of: pack, asked: 1, flow: flow, apple: apple) == Int(charge) * 1000)
        }
    }

    /// Last and this month subscribed, everything of them spent, and a pack of 100 bought (consent given, the policy
    /// answering at once); `body` gets the flow, the fake Apple, the account, last month's transaction and the pack's.
    static func afterAPack(
        _ body: @escaping @Sendable (inout LifecycleFlow, FakeApple, UUID, TransactionPayload, TransactionPayload) async throws -> Void
    ) async throws {
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
                    try await body(&flow, apple, account, try #require(lastMonth.transaction), pack)
                }
            }
        }
    }

    /// The `consumptionPercentage` of the answer to the `asked`-th CONSUMPTION_REQUEST, sent now for `pack`.
    static func consumption(of pack: TransactionPayload, asked: Int, flow: LifecycleFlow, apple: FakeApple) async throws -> Int? {
        let signed = Int64(Date().timeIntervalSince1970 * 1000) + Int64(asked)
        try await flow.post(RefundDefenceTests.consumptionRequest(pack, signedDate: signed), notificationUUID: UUID())
        try await eventually("answer \(asked) to reach Apple") { RefundDefenceTests.answers(apple).count == asked }
        return RefundDefenceTests.answers(apple).last?["consumptionPercentage"] as? Int
    }

    /// Holds `amount` of the account's `ai_requests` for a generation; the hold's id.
    static func hold(_ amount: Int64, for account: UUID, client: any TestClientProtocol) async throws -> String {
        let held = try await Self.post(
            client, "/v1/accounts/\(account.uuidString.lowercased())/holds",
            #"{"meter": "ai_requests", "amount": \#(amount), "idempotencyKey": "generation"}"#)
        #expect(held.status == .created, "\(String(buffer: held.body))")
        return try held.answer(CreditHoldAnswer.self).id
    }

    static func remaining(_ client: any TestClientProtocol, _ account: UUID) async throws -> Int64 {
        let status = try await client.getWithKey("/v1/accounts/\(account)/status")
        return try status.answer(StatusAnswer.self).credits["ai_requests"]?.remaining ?? -1
    }

    static func post(_ client: any TestClientProtocol, _ uri: String, _ body: String) async throws -> TestResponse {
        try await client.execute(
            uri: uri, method: .post, headers: [.authorization: "Bearer \(StorekeeperHarness.apiKey)", .contentType: "application/json"],
            body: ByteBuffer(string: body))
    }
}
