import AppStoreModels
import Foundation
import HummingbirdTesting
import LocalSigning
import Testing

@testable import IntegrationSupport

/// Apple refunds this month's period in full (`REFUND_FULL`) while credits of its window are out — held for a model
/// call, and spent for a lookup that failed and is given back later — and then reverses the refund (issue 53 item 2,
/// docs/credits.md "Held credits of a refunded window"). The expectations are the customer's, worked by hand: the
/// refund empties the month's window whether the work came back before it reached the server or after; the reversal
/// gives back the month's 1,000 less what the work cost, in either order; the top-up is not touched. The same when the
/// generation held all the window had left, so that the refund found nothing to take (sql/0060).
@Suite("A refunded window: this month refunded while its credits are held, in either order, then the refund reversed")
struct RefundWhileHeldTests {
    enum Order: CaseIterable { case refundWhileOut, refundAfter }

    @Test(
        "100 spent and 500 or all 900 left held of this month's 1,000, a top-up's 100 beside, this month refunded in full: the window empty and the top-up whole after the refund, and nothing more due by the rules; after its reversal 1,100 less the charge, the work back before or after the refund",
        arguments: [Int64(0), 300, 500], [Int64(500), 900])
    func eitherOrder(charge: Int64, held amount: Int64) async throws {
        try await StorekeeperHarness.run(environment: CreditHoldTests.environment) { harness in
            try await harness.withHTTP { client in
                for order in Order.allCases {
                    let account = UUID()
                    let id = account.uuidString.lowercased()
                    var flow = LifecycleFlow(harness: harness, client: client, account: account)
                    let (_, thisMonth) = try await flow.sendLastAndThisMonth(now: Int64(Date().timeIntervalSince1970 * 1000))
                    try await CreditHoldTests.topUp(client, id, "ai_requests", 100)
                    let base = try #require(try await CreditHoldTests.remaining(client, id, "ai_requests"))
                    #expect(base == 1_100, "this month's 1,000 and the top-up's 100")
                    // A lookup of 100 that failed (given back once the rest is over) and a generation held for 500 or 900:
                    // both from the window, which keeps 400 or nothing.
                    #expect(try await client.spend(account, amount: 100, key: "lookup").status == .ok)
                    let held = try await CreditHoldTests.hold(client, id, "ai_requests", Int(amount), key: "generation")
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
                    #expect(meter?.topUp == 100, "\(order) charging \(charge): the top-up after the refund, \(String(describing: meter))")
                    #expect((meter?.cycle ?? 0) == 0, "\(order) charging \(charge): the refunded window, \(String(describing: meter))")
                    // What the customer did not get back as the work ended: none when it ended before the refund; after
                    // it, the hold's rest and the lookup's 100, which the refund took.
                    let ending = try ended.answer(CreditHoldAnswer.self)
                    let reversal = try givenBack.answer(SpendReversalAnswer.self)
                    let lapsed: Int64 = order == .refundAfter ? 0 : amount - charge + 100
                    #expect((ending.lapsed ?? 0) + reversal.lapsed == lapsed, "\(order) charging \(charge) of \(amount): \(ending), \(reversal)")
                    #expect(ending.charged == charge && (ending.returned ?? 0) + (ending.lapsed ?? 0) == amount - charge, "\(order): \(ending)")
                    // The refund's takes of what came back: the hold's rest (none when charged whole) and the lookup's, named
                    // without the account or the app's key (an erasure does not rewrite a window's rows).
                    let mine = try await harness.client.query(
                        """
                        SELECT operation_key FROM credit_ledger WHERE operation_key LIKE 'refund:%:back:%'
                            AND bucket IN (SELECT key FROM credit_buckets WHERE original_transaction_id = \(flow.originalTransactionId))
                        """,
                        logger: TestDatabase.logger
                    ).collect().map { try $0.decode(String.self) }
                    #expect(mine.count == (order == .refundAfter ? 0 : charge < amount ? 2 : 1), "\(order) charging \(charge) of \(amount): \(mine)")
                    #expect(!mine.contains { $0.contains(id) || $0.contains("lookup") }, "\(mine)")
                    // Taken under the refund's own stamp, so the rules count the takes as the refund's: deriving the
                    // subscription again finds nothing due (a take under another stamp would be given back and taken again).
                    let (replayed, output) = try await TestProcess.run(
                        "storekeeper", ["replay", "--subscription", flow.originalTransactionId],
                        environment: ["DATABASE_URL": harness.databaseURL.urlString])
                    #expect(replayed == 0 && !output.contains("differs"), "\(order) charging \(charge) of \(amount): \(output)")
                    try await flow.sendFullRefund(of: transaction, reversed: true)
                    #expect(
                        try await CreditHoldTests.remaining(client, id, "ai_requests") == 1_100 - charge,
                        "\(order) charging \(charge): after the reversal, all but the charge")
                    #expect(
                        try await harness.count(
                            "SELECT count(*) FROM (SELECT bucket FROM credit_ledger GROUP BY bucket HAVING sum(delta) < 0) AS b") == 0)
                }
            }
        }
    }
}
