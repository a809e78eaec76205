import AppStoreModels
import Foundation
import HummingbirdTesting
import Testing

@testable import IntegrationSupport

/// A top-up refunded while some of its credits are out — held for a model call, or spent and given back later — ends
/// where it would have ended had the credits come back first (issue 53, docs/credits.md "Where credits go back"). The
/// expectations are the customer's: 100 credits bought and refunded, 30 given by support, 5 free a day; whatever the
/// order, once the work is given back the customer keeps what the refund leaves, and a reversal of the refund gives all
/// 100 back.
@Suite("Claims: a top-up refunded while its credits are held or spent, in either order")
struct CreditClaimTests {
    /// The ways the customer's 120 credits of work are out and come back.
    enum Work: CaseIterable { case holdSettled, holdReleased, spendReversed }
    /// Whether the refund reaches the server while the work is out, or after it came back; or the refund and its
    /// reversal both while it is out.
    enum Order: CaseIterable { case refundWhileOut, refundAfter, refundAndReversalWhileOut }

    @Test(
        "held or spent-and-reversed credits of a refunded top-up pay the refund when they come back: the same balance in either order, and the refund's reversal gives all 100 back",
        arguments: Work.allCases)
    func eitherOrder(_ work: Work) async throws {
        try await StorekeeperHarness.run(worker: false, environment: CreditHoldTests.environment) { harness in
            try await harness.withHTTP { client in
                var ends: [Order: (refunded: Int64?, reversed: Int64?)] = [:]
                for order in Order.allCases {
                    let (account, sale) = try await Self.customer(harness, client)
                    // 5 free today, then 130 of top-ups.
                    #expect(try await CreditHoldTests.remaining(client, account, "ai_requests") == 135)
                    // 120 out: the 5 free and 115 of the top-ups, leaving 15.
                    let id: String
                    switch work {
                    case .holdSettled, .holdReleased:
                        let held = try await CreditHoldTests.hold(client, account, "ai_requests", 120, key: "gen")
                        #expect(held.status == .created)
                        id = try held.answer(CreditHoldAnswer.self).id
                    case .spendReversed:
                        #expect(try await client.spend(UUID(uuidString: account)!, amount: 120, key: "gen").status == .ok)
                        id = ""
                    }
                    #expect(try await CreditHoldTests.remaining(client, account, "ai_requests") == 15)
                    let refund = { try await Self.refund(sale, of: account, client: client, harness: harness) }
                    if order != .refundAfter { try await refund() }
                    if order == .refundAndReversalWhileOut { try await Self.reverseRefund(sale, of: account, client: client, harness: harness) }
                    switch work {
                    case .holdSettled:
                        // 20 charged: the 5 free and 15 of the top-ups; 100 come back.
                        let settled = try await CreditHoldTests.post(client, "/v1/holds/\(id)/settle", #"{"amount": 20}"#)
                        #expect(try settled.status == .ok && settled.answer(CreditHoldAnswer.self).charged == 20, "\(String(buffer: settled.body))")
                    case .holdReleased:
                        #expect(try await CreditHoldTests.post(client, "/v1/holds/\(id)/release", "").status == .ok)
                    case .spendReversed:
                        #expect(try await CreditHoldTests.post(client, "/v1/accounts/\(account)/usage/gen/reverse", "").status == .ok)
                    }
                    if order == .refundAfter { try await refund() }
                    let refunded = order == .refundAndReversalWhileOut ? nil : try await CreditHoldTests.remaining(client, account, "ai_requests")
                    if order != .refundAndReversalWhileOut { try await Self.reverseRefund(sale, of: account, client: client, harness: harness) }
                    ends[order] = (refunded, try await CreditHoldTests.remaining(client, account, "ai_requests"))
                    #expect(
                        try await harness.count(
                            "SELECT count(*) FROM (SELECT bucket FROM credit_ledger GROUP BY bucket HAVING sum(delta) < 0) AS b") == 0)
                }
                // By hand: 135 less what the work cost (20 settled: the 5 free and 15 of the top-ups; nothing released or
                // reversed), less the refund's 100 — and the 100 back once the refund is reversed.
                let charged: Int64 = work == .holdSettled ? 20 : 0
                let expected = (refunded: 135 - charged - 100, reversed: 135 - charged)
                for order in Order.allCases {
                    if order != .refundAndReversalWhileOut {
                        #expect(ends[order]?.refunded == expected.refunded, "\(work), \(order): after the refund")
                    }
                    #expect(ends[order]?.reversed == expected.reversed, "\(work), \(order): after the refund's reversal")
                }
            }
        }
    }

    @Test(
        "a claim is paid once: two holds released together and a spend given back pay the refund's 100 between them; an erasure renames every row of it"
    )
    func paidOnce() async throws {
        try await StorekeeperHarness.run(worker: false, environment: CreditHoldTests.environment) { harness in
            try await harness.withHTTP { client in
                let (account, sale) = try await Self.customer(harness, client)
                // 5 free + 55, then 65, then a spend of the last 10 of the top-ups.
                let first = try await CreditHoldTests.hold(client, account, "ai_requests", 60, key: "a").answer(CreditHoldAnswer.self).id
                let second = try await CreditHoldTests.hold(client, account, "ai_requests", 65, key: "b").answer(CreditHoldAnswer.self).id
                #expect(try await client.spend(UUID(uuidString: account)!, amount: 10, key: "last").status == .ok)
                try await Self.refund(sale, of: account, client: client, harness: harness)
                // Nothing there to take: all 100 claimed.
                #expect(try await CreditHoldTests.remaining(client, account, "ai_requests") == 0)
                // Released together, in one group or two: 120 come back to the top-ups, 100 of them pay the claim.
                async let a = CreditHoldTests.post(client, "/v1/holds/\(first)/release", "")
                async let b = CreditHoldTests.post(client, "/v1/holds/\(second)/release", "")
                let (ra, rb) = try await (a, b)
                #expect(ra.status == .ok && rb.status == .ok)
                let lapsed = try [ra, rb].compactMap { try $0.answer(CreditHoldAnswer.self).lapsed }.reduce(0, +)
                #expect(lapsed == 100, "\(String(buffer: ra.body)) \(String(buffer: rb.body))")
                // The claim is paid: the spend's 10 all come back.
                let reversed = try await CreditHoldTests.post(client, "/v1/accounts/\(account)/usage/last/reverse", "")
                let reversal = try reversed.answer(SpendReversalAnswer.self)
                #expect(reversal.returned == 10 && reversal.lapsed == 0, "\(String(buffer: reversed.body))")
                // 130 + 5 free − the refund's 100.
                #expect(try await CreditHoldTests.remaining(client, account, "ai_requests") == 35)
                let family = "operation_key LIKE 'refund:\(sale.transactionId):%' OR operation_key LIKE 'claim:refund:\(sale.transactionId):%'"
                #expect(try await harness.count("SELECT (-sum(delta))::int FROM credit_ledger WHERE \(family)") == 100)

                let erased = try await CreditHoldTests.post(
                    client, "/admin/accounts/\(account)/erase", #"{"confirm": "\#(account)"}"#, headers: CreditHoldTests.admin)
                #expect(erased.status == .ok, "\(String(buffer: erased.body))")
                let pseudonym = try erased.answer(ErasureAnswer.self).pseudonym ?? "-"
                #expect(
                    try await harness.count(
                        "SELECT count(*) FROM credit_ledger WHERE operation_key LIKE '%\(account)%' OR bucket LIKE '%\(account)%'") == 0)
                // The refund, its claim and the two payments, under the pseudonym's top-ups.
                #expect(
                    try await harness.count("SELECT count(*) FROM credit_ledger WHERE (\(family)) AND bucket = 'topup:\(pseudonym):ai_requests'") == 4
                )
                #expect(try await CreditHoldTests.remaining(client, pseudonym, "ai_requests") == 35)
            }
        }
    }

    @Test("holds ended in one transaction (an expiry sweep) share a claim: paid once between them, not once each")
    func oneGroup() async throws {
        try await StorekeeperHarness.run(worker: false, environment: CreditHoldTests.environment) { harness in
            try await harness.withHTTP { client in
                let (account, sale) = try await Self.customer(harness, client)
                // 5 free + 45, then 50: 95 of the top-ups' 130 out.
                var ids: [String] = []
                for (key, amount) in [("a", 50), ("b", 50)] {
                    ids.append(
                        try await CreditHoldTests.hold(client, account, "ai_requests", amount, key: key, expiresIn: 60).answer(CreditHoldAnswer.self)
                            .id)
                }
                try await Self.refund(sale, of: account, client: client, harness: harness)
                // One sweep, past both expiries: one transaction, one read of the claim for both.
                var failed = Set<UUID>()
                #expect(try await harness.components.holds.expireDue(now: Date().addingTimeInterval(120), failed: &failed) == 2)
                var lapsed: Int64 = 0
                for id in ids {
                    let hold = try await client.getWithKey("/v1/holds/\(id)").answer(CreditHoldAnswer.self)
                    #expect(hold.state == "expired")
                    lapsed += hold.lapsed ?? -1
                }
                // The refund took the 35 there and claimed 65: of the top-ups' 95 coming back, 65 pay it once between the
                // two holds (paid by each, it would take 95); the day's 5 go back to the day.
                #expect(lapsed == 65)
                // 130 + 5 free − the refund's 100.
                #expect(try await CreditHoldTests.remaining(client, account, "ai_requests") == 35)
                let family = "operation_key LIKE 'refund:\(sale.transactionId):%' OR operation_key LIKE 'claim:refund:\(sale.transactionId):%'"
                let rows = try await CreditTests.ledger(harness)
                #expect(try await harness.count("SELECT (-sum(delta))::int FROM credit_ledger WHERE \(family)") == 100, "\(rows)")
            }
        }
    }

    /// A new customer of the free tier with a pack of 100 bought from Apple and 30 credits given by support.
    static func customer(_ harness: StorekeeperHarness, _ client: any TestClientProtocol) async throws -> (account: String, sale: TransactionPayload)
    {
        let account = UUID().uuidString.lowercased()
        let sale = try sale(harness)
        #expect(try await client.postTransaction(try signed(sale, harness), account: account).status == .ok)
        try await CreditHoldTests.topUp(client, account, "ai_requests", 30)
        return (account, sale)
    }

    static func sale(_ harness: StorekeeperHarness) throws -> TransactionPayload {
        var transaction = TransactionPayload(
            transactionId: String(Int.random(in: 1_000_000...9_999_999)), originalTransactionId: "0", productId: "credits.100",
            bundleId: StorekeeperHarness.bundleId, environment: .sandbox, signedDate: Int64(Date().timeIntervalSince1970 * 1000) - 60_000)
        transaction.originalTransactionId = transaction.transactionId
        transaction.type = "Consumable"
        return transaction
    }

    static func signed(_ transaction: TransactionPayload, _ harness: StorekeeperHarness) throws -> String {
        try harness.signer.signer.sign(transaction)
    }

    /// The app posts Apple's newer copy of the sale, refunded.
    static func refund(_ sale: TransactionPayload, of account: String, client: any TestClientProtocol, harness: StorekeeperHarness) async throws {
        var refunded = sale
        refunded.signedDate = sale.signedDate.map { $0 + 10_000 }
        refunded.revocationDate = refunded.signedDate
        refunded.revocationReason = 0
        let response = try await client.postTransaction(try signed(refunded, harness), account: account)
        #expect(response.status == .ok, "\(response.json)")
    }

    /// And Apple's newer copy still, the refund reversed.
    static func reverseRefund(_ sale: TransactionPayload, of account: String, client: any TestClientProtocol, harness: StorekeeperHarness)
        async throws
    {
        var reversed = sale
        reversed.signedDate = sale.signedDate.map { $0 + 20_000 }
        let response = try await client.postTransaction(try signed(reversed, harness), account: account)
        #expect(response.status == .ok, "\(response.json)")
    }
}
