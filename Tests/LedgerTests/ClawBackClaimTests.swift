import AppStoreModels
import Foundation
import HummingbirdTesting
import LocalSigning
import Testing

@testable import IntegrationSupport

/// Apple refunds last month's period at 50 % (`REFUND_PRORATED`) while credits of this month's window are out in a
/// hold for a model call (issue 53, docs/credits.md "A claw-back that finds credits out"). The expectations are the
/// customer's, worked by hand: half of last month's 1,000 is taken back from what the account has, whether the hold
/// ended before the refund reached the server or after; the refund's reversal gives it all back.
@Suite("Claw-backs: an earlier period refunded at a percentage while this month's credits are held, in either order")
struct ClawBackClaimTests {
    enum Order: CaseIterable { case refundWhileHeld, refundAfter }

    @Test(
        "100 spent and 950 held of this month's 1,000 and a top-up's 100, last month refunded at 50 %: the hold ended before or after the refund, then the spend given back, leaves the same credits, 500 fewer than the work left (never below zero); the refund's reversal gives them back",
        arguments: [Int64(0), 300, 950])
    func eitherOrder(charge: Int64) async throws {
        try await StorekeeperHarness.run(environment: CreditHoldTests.environment) { harness in
            try await harness.withHTTP { client in
                var ends: [Order: (base: Int64, refunded: Int64?, reversed: Int64?)] = [:]
                for order in Order.allCases {
                    let account = UUID()
                    let id = account.uuidString.lowercased()
                    var flow = LifecycleFlow(harness: harness, client: client, account: account)
                    // Last month's period, bought 40 days ago; this month's, renewed 10 days ago.
                    let otid = flow.originalTransactionId
                    let (lastMonth, _) = try await flow.sendLastAndThisMonth(now: Int64(Date().timeIntervalSince1970 * 1000))
                    try await CreditHoldTests.topUp(client, id, "ai_requests", 100)
                    let base = try #require(try await CreditHoldTests.remaining(client, id, "ai_requests"))
                    #expect(base >= 1100, "this month's 1,000 and the top-up's 100 (and the day's free credits): \(base)")
                    // A spend of 100 that failed, given back once the rest is over, and a generation held for 950: the
                    // window's 900 left and 50 of the top-up.
                    #expect(try await client.spend(account, amount: 100, key: "lookup").status == .ok)
                    let held = try await CreditHoldTests.hold(client, id, "ai_requests", 950, key: "generation")
                    #expect(held.status == .created, "\(String(buffer: held.body))")
                    let hold = try held.answer(CreditHoldAnswer.self).id
                    func end() async throws {
                        let ended = try await CreditHoldTests.end(client, hold: hold, charge: charge)
                        #expect(ended.status == .ok, "\(order): \(String(buffer: ended.body))")
                    }
                    // Apple's REFUND of last month's transaction, prorated at 50 %, and later its REFUND_REVERSED.
                    let lastMonthsTransaction = try #require(lastMonth.transaction)
                    func refund(reversed: Bool) async throws { try await flow.sendProratedRefund(of: lastMonthsTransaction, reversed: reversed) }
                    if order == .refundWhileHeld { try await refund(reversed: false) }
                    try await end()
                    if order == .refundAfter { try await refund(reversed: false) }
                    let givenBack = try await CreditHoldTests.post(client, "/v1/accounts/\(id)/usage/lookup/reverse", "")
                    #expect(givenBack.status == .ok, "\(String(buffer: givenBack.body))")
                    let refunded = try await CreditHoldTests.remaining(client, id, "ai_requests")
                    try await refund(reversed: true)
                    ends[order] = (base, refunded, try await CreditHoldTests.remaining(client, id, "ai_requests"))
                    #expect(
                        try await harness.count(
                            "SELECT count(*) FROM (SELECT bucket FROM credit_ledger GROUP BY bucket HAVING sum(delta) < 0) AS b") == 0)
                    if order == .refundWhileHeld {
                        // Only the top-up's 50 were there: the rest of the 500 is owed and claimed on the held credits,
                        // from the last bucket back — the top-up's 50, then 400 of the window's 900.
                        let claims = try await harness.client.query(
                            """
                            SELECT b.kind, c.delta FROM credit_ledger c JOIN credit_buckets b ON b.key = c.bucket
                            WHERE c.operation_key LIKE 'claim:clawback:%' AND c.delta > 0
                              AND (b.original_transaction_id = \(otid) OR b.account_id = \(id)) ORDER BY b.kind
                            """, logger: TestDatabase.logger)
                        var claimed: [String] = []
                        for try await (kind, delta) in claims.decode((String, Int64).self) { claimed.append("\(kind) \(delta)") }
                        #expect(claimed == ["cycle 400", "topup 50"], "\(claimed)")
                    }
                }
                // By hand: what the account had, less what the work cost, less ceil(1,000 × 50 %); all but the work's
                // cost once the refund is reversed.
                for order in Order.allCases {
                    let base = ends[order]?.base ?? 0
                    #expect(ends[order]?.refunded == max(base - charge - 500, 0), "\(order): after the refund")
                    #expect(ends[order]?.reversed == base - charge, "\(order): after its reversal")
                }
            }
        }
    }
}
