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
        "100 spent and 800 held of this month's 1,000, last month refunded at 50 %: the hold ended before or after the refund, then the spend given back, leaves the same credits, 500 fewer than the work left (never below zero); the refund's reversal gives them back",
        arguments: [Int64(0), 300, 800])
    func eitherOrder(charge: Int64) async throws {
        try await StorekeeperHarness.run(environment: CreditHoldTests.environment) { harness in
            try await harness.withHTTP { client in
                var ends: [Order: (refunded: Int64?, reversed: Int64?)] = [:]
                var base: Int64 = 0
                for order in Order.allCases {
                    let account = UUID()
                    let id = account.uuidString.lowercased()
                    var flow = LifecycleFlow(harness: harness, client: client, account: account)
                    let day: Int64 = 86_400_000
                    let now = Int64(Date().timeIntervalSince1970 * 1000)
                    let otid = flow.originalTransactionId
                    func period(_ event: inout SimulatedEvent, _ index: Int64, from: Int64, to: Int64) {
                        event.transaction?.transactionId = "\(otid)\(index)"
                        event.transaction?.webOrderLineItemId = "\(otid).\(index)"
                        event.transaction?.purchaseDate = from
                        event.transaction?.originalPurchaseDate = now - 40 * day
                        event.transaction?.expiresDate = to
                        event.renewalInfo?.renewalDate = to
                    }
                    // Last month's period, bought 40 days ago; this month's, renewed 10 days ago.
                    let lastMonth = try await flow.send(.subscribe) { period(&$0, 0, from: now - 40 * day, to: now - 10 * day) }
                    try await flow.send(.renew) { period(&$0, 1, from: now - 10 * day, to: now + 20 * day) }
                    let before = try #require(try await CreditHoldTests.remaining(client, id, "ai_requests"))
                    #expect(before >= 1000, "this month's 1,000 (and the day's free credits): \(before)")
                    base = before
                    // A spend of 100 that failed, given back once the rest is over, and a generation held for 800.
                    #expect(try await client.spend(account, amount: 100, key: "lookup").status == .ok)
                    let held = try await CreditHoldTests.hold(client, id, "ai_requests", 800, key: "generation")
                    #expect(held.status == .created, "\(String(buffer: held.body))")
                    let hold = try held.answer(CreditHoldAnswer.self).id
                    func end() async throws {
                        let ended =
                            charge > 0
                            ? try await CreditHoldTests.post(client, "/v1/holds/\(hold)/settle", #"{"amount": \#(charge)}"#)
                            : try await CreditHoldTests.post(client, "/v1/holds/\(hold)/release", "")
                        #expect(ended.status == .ok, "\(order): \(String(buffer: ended.body))")
                    }
                    // Apple's REFUND of last month's transaction, prorated at 50 %, and later its REFUND_REVERSED.
                    func refund(reversed: Bool) async throws {
                        try await flow.send(.refund) { event in
                            var transaction = try! #require(lastMonth.transaction)
                            transaction.signedDate = event.signedDate
                            if reversed {
                                event.notificationType = "REFUND_REVERSED"
                            } else {
                                transaction.revocationDate = event.signedDate
                                transaction.revocationReason = 0
                                transaction.revocationType = "REFUND_PRORATED"
                                transaction.revocationPercentage = 50_000
                            }
                            event.transaction = transaction
                            event.status = 1
                            event.renewalInfo?.autoRenewStatus = 1
                        }
                    }
                    if order == .refundWhileHeld { try await refund(reversed: false) }
                    try await end()
                    if order == .refundAfter { try await refund(reversed: false) }
                    let givenBack = try await CreditHoldTests.post(client, "/v1/accounts/\(id)/usage/lookup/reverse", "")
                    #expect(givenBack.status == .ok, "\(String(buffer: givenBack.body))")
                    let refunded = try await CreditHoldTests.remaining(client, id, "ai_requests")
                    try await refund(reversed: true)
                    ends[order] = (refunded, try await CreditHoldTests.remaining(client, id, "ai_requests"))
                    #expect(
                        try await harness.count(
                            "SELECT count(*) FROM (SELECT bucket FROM credit_ledger GROUP BY bucket HAVING sum(delta) < 0) AS b") == 0)
                    if order == .refundWhileHeld {
                        // Only 100 were there (and the day's, if any): the rest of the 500 is owed, and claimed.
                        #expect(
                            try await harness.count(
                                """
                                SELECT count(*) FROM credit_ledger WHERE operation_key LIKE 'claim:clawback:%' AND delta > 0
                                    AND bucket IN (SELECT key FROM credit_buckets WHERE original_transaction_id = '\(otid)' AND kind = 'cycle')
                                """
                            ) == 1)
                    }
                }
                // By hand: what the account had, less what the work cost, less ceil(1,000 × 50 %); all but the work's
                // cost once the refund is reversed.
                for order in Order.allCases {
                    #expect(ends[order]?.refunded == max(base - charge - 500, 0), "\(order): after the refund")
                    #expect(ends[order]?.reversed == base - charge, "\(order): after its reversal")
                }
            }
        }
    }
}
