import AppStoreModels
import Foundation
import HummingbirdTesting
import LocalSigning
import Testing

@testable import IntegrationSupport

/// Apple refunds this month's period in full (`REFUND_FULL`) while credits of its window are out — held for a model
/// call, and spent for a lookup that failed and is given back later — and then reverses the refund (issue 53,
/// docs/credits.md "A refunded window"). The expectations are the customer's, worked by hand: the refund takes the
/// month's 1,000 whether the work came back before it reached the server or after; what the work cost of the top-up
/// stays spent; the reversal gives back everything but what the work cost.
@Suite("A refunded window: this month refunded while its credits are held, in either order, then the refund reversed")
struct RefundWhileHeldTests {
    enum Order: CaseIterable { case refundWhileOut, refundAfter }

    @Test(
        "100 spent and 950 held of this month's 1,000 and a top-up's 100, this month refunded in full: the work back before or after the refund leaves the top-up less its charge; the reversal gives back all but the charge",
        arguments: [Int64(0), 300, 950])
    func eitherOrder(charge: Int64) async throws {
        try await StorekeeperHarness.run(environment: CreditHoldTests.environment) { harness in
            try await harness.withHTTP { client in
                var ends: [Order: (base: Int64, topUp: Int64?, cycle: Int64?, lapsed: Int64?, reversed: Int64?)] = [:]
                for order in Order.allCases {
                    let account = UUID()
                    let id = account.uuidString.lowercased()
                    var flow = LifecycleFlow(harness: harness, client: client, account: account)
                    let (_, thisMonth) = try await flow.sendLastAndThisMonth(now: Int64(Date().timeIntervalSince1970 * 1000))
                    try await CreditHoldTests.topUp(client, id, "ai_requests", 100)
                    let base = try #require(try await CreditHoldTests.remaining(client, id, "ai_requests"))
                    // A lookup of 100 that failed (given back once the rest is over) and a generation held for 950: the
                    // window's 900 left and 50 of the top-up.
                    #expect(try await client.spend(account, amount: 100, key: "lookup").status == .ok)
                    let held = try await CreditHoldTests.hold(client, id, "ai_requests", 950, key: "generation")
                    #expect(held.status == .created, "\(String(buffer: held.body))")
                    let hold = try held.answer(CreditHoldAnswer.self).id
                    let transaction = try #require(thisMonth.transaction)
                    if order == .refundWhileOut { try await flow.sendFullRefund(of: transaction) }
                    let ended = try await CreditHoldTests.end(client, hold: hold, charge: charge)
                    #expect(ended.status == .ok, "\(order): \(String(buffer: ended.body))")
                    let givenBack = try await CreditHoldTests.post(client, "/v1/accounts/\(id)/usage/lookup/reverse", "")
                    #expect(givenBack.status == .ok, "\(String(buffer: givenBack.body))")
                    if order == .refundAfter { try await flow.sendFullRefund(of: transaction) }
                    let meter = try await CreditHoldTests.credits(client, id, "ai_requests")
                    // What the customer lost to the refund of what came back after it: the hold's and the reversal's
                    // `lapsed` (none when the work came back first).
                    let lapsed =
                        try (ended.answer(CreditHoldAnswer.self).lapsed ?? 0) + (givenBack.answer(SpendReversalAnswer.self).lapsed)
                    try await flow.sendFullRefund(of: transaction, reversed: true)
                    ends[order] = (base, meter?.topUp, meter?.cycle, lapsed, try await CreditHoldTests.remaining(client, id, "ai_requests"))
                    #expect(
                        try await harness.count(
                            "SELECT count(*) FROM (SELECT bucket FROM credit_ledger GROUP BY bucket HAVING sum(delta) < 0) AS b") == 0)
                }
                // By hand: the charge is taken from the front of the hold — the window's 900, then the top-up's 50 — so
                // the top-up keeps 100 less what of the charge passed 900, and the window holds nothing while refunded.
                // What came back after the refund (the 100 given back, the hold's 950 less its charge from the window)
                // lapsed to it. Reversed, all but the charge is back.
                let topUpCharged = max(charge - 900, 0)
                for order in Order.allCases {
                    let end = ends[order]
                    #expect(end?.topUp == 100 - topUpCharged, "\(order): the top-up after the refund, \(String(describing: end))")
                    #expect((end?.cycle ?? 0) == 0, "\(order): the refunded window, \(String(describing: end))")
                    let lapsedByHand: Int64 = order == .refundAfter ? 0 : 100 + 900 - min(charge, 900)
                    #expect(end?.lapsed == lapsedByHand, "\(order): lapsed, \(String(describing: end))")
                    #expect(end?.reversed == (end?.base ?? 0) - charge, "\(order): after the reversal, \(String(describing: end))")
                }
            }
        }
    }
}
