import AppStoreModels
import Foundation
import HummingbirdTesting
import LocalSigning
import Testing

@testable import IntegrationSupport

/// Apple refunds last month's period at 50 % (`REFUND_PRORATED`) after the owner spent most of this month's window, so
/// the claw-back takes the window's rest and the remainder from the owner's top-up; then another account claims the
/// subscription (`STOREKEEPER_TRANSFER_POLICY=transfer`). Expectations are the customers', worked by
/// hand: the new owner gets the subscription as it stands, its own credits untouched — the claw-back was made, and is
/// not made again from the new owner's top-up — and `storekeeper replay` agrees.
@Suite("Claw-backs: a subscription claimed by another account after a claw-back, on real PostgreSQL")
struct ClawBackTransferTests {
    @Test(
        "the first owner spent 800 of 1,000 and had 400 in a top-up, last month refunded at 50 % took the window's rest and 300 of the top-up; another account with 300 of its own claims it, then the first claims it back: both keep what they had each time, and replay finds no difference"
    )
    func claimedAfterTheClawBack() async throws {
        try await Self.withFirstOwner { harness, client, flow, first, second, lastMonth, thisMonth in
            let (firstId, secondId) = (first.uuidString.lowercased(), second.uuidString.lowercased())
            let window = "cycle:\(flow.originalTransactionId).1:w0:ai_requests"
            func balance(_ bucket: String) async throws -> Int64 { try await Self.balance(bucket, harness) }
            #expect(try await CreditHoldTests.remaining(client, firstId, "ai_requests") == 600)
            #expect(try await balance(window) == 200)

            // Last month refunded at 50 %: 500 owed, the window's 200, then 300 of the top-up's 400.
            try await flow.sendProratedRefund(of: try #require(lastMonth.transaction))
            #expect(try await CreditHoldTests.remaining(client, firstId, "ai_requests") == 100)
            #expect(try await balance("topup:\(firstId):ai_requests") == 100)
            #expect(
                try await harness.count(
                    "SELECT count(*) FROM credit_ledger WHERE operation_key LIKE 'clawback:%' AND bucket = 'topup:\(firstId):ai_requests' AND delta = -300"
                ) == 1)

            // Another account, with a top-up of its own, claims the subscription (a client-posted transaction).
            try await CreditHoldTests.topUp(client, secondId, "ai_requests", 300)
            let before = try #require(try await CreditHoldTests.remaining(client, secondId, "ai_requests"))
            var claim = try #require(thisMonth.transaction)
            claim.appAccountToken = nil
            claim.signedDate = Int64(Date().timeIntervalSince1970 * 1000)
            let claimed = try await client.postTransaction(try harness.signer.signer.sign(claim), account: second)
            #expect(claimed.status == .ok, "\(String(buffer: claimed.body))")
            #expect(try await flow.detailAnswer().accountId == secondId)
            // The window had nothing left: the new owner has what it had (its top-up's 300 and no more taken from
            // it), and the first owner keeps its top-up's 100.
            #expect(try await balance("topup:\(secondId):ai_requests") == 300, "clawed back again from the new owner")
            #expect(try await balance("topup:\(firstId):ai_requests") == 100)
            #expect(try await balance(window) == 0)
            #expect(
                try await harness.count(
                    "SELECT count(*) FROM credit_ledger WHERE operation_key LIKE 'clawback:%' AND bucket LIKE 'topup:\(secondId):%'")
                    == 0)
            let after = try #require(try await CreditHoldTests.remaining(client, secondId, "ai_requests"))
            #expect(after >= 300 && after <= before, "the new owner's top-up and the day's free credits: \(after), before \(before)")
            // And back to the first owner (a move A → B → A): its own take-backs are in sight again, nothing more is
            // taken from either.
            claim.signedDate = Int64(Date().timeIntervalSince1970 * 1000) + 1_000
            let back = try await client.postTransaction(try harness.signer.signer.sign(claim), account: first)
            #expect(back.status == .ok, "\(String(buffer: back.body))")
            #expect(try await flow.detailAnswer().accountId == firstId)
            #expect(try await balance("topup:\(firstId):ai_requests") == 100)
            #expect(try await balance("topup:\(secondId):ai_requests") == 300)
            #expect(try await harness.count("SELECT count(*) FROM credit_ledger WHERE operation_key LIKE 'clawback:%'") == 2)
            let (status, output) = try await TestProcess.run(
                "storekeeper", ["replay", "--all"], environment: ["DATABASE_URL": harness.databaseURL.urlString])
            #expect(status == 0 && !output.contains("differs"), "replay: \(output)")
        }
    }

    @Test(
        "the first owner spent 800 and held 300 (the window's 200, the top-up's 100), last month refunded at 50 % took the top-up's 300 and claimed 100 more there, the hold released paid the claims, another account claimed the subscription, then Apple reverses the refund: the first owner's top-up is 400 again, the window 200, the new owner keeps its 300, and replay finds no difference"
    )
    func reversedAfterTheMove() async throws {
        try await Self.withFirstOwner { harness, client, flow, first, second, lastMonth, thisMonth in
            let (firstId, secondId) = (first.uuidString.lowercased(), second.uuidString.lowercased())
            let window = "cycle:\(flow.originalTransactionId).1:w0:ai_requests"
            func balance(_ bucket: String) async throws -> Int64 { try await Self.balance(bucket, harness) }
            let hold = try await CreditHoldTests.hold(client, firstId, "ai_requests", 300, key: "generation")
            #expect(hold.status == .created, "\(String(buffer: hold.body))")
            let holdId =
                try #require(try JSONSerialization.jsonObject(with: Data(String(buffer: hold.body).utf8)) as? [String: Any])["id"] as? String
            // 500 owed: the top-up's 300 there, then of the held credits, from the last bucket back, 100 claimed on
            // the top-up and 100 on the window; the hold's release pays both claims first.
            let refunded = try #require(lastMonth.transaction)
            try await flow.sendProratedRefund(of: refunded)
            #expect(try await balance("topup:\(firstId):ai_requests") == 0)
            #expect(
                try await harness.count(
                    "SELECT count(*) FROM credit_ledger WHERE operation_key LIKE 'claim:clawback:%' AND bucket = 'topup:\(firstId):ai_requests' AND delta = 100"
                ) == 1)
            #expect(try await CreditHoldTests.end(client, hold: try #require(holdId), charge: 0).status == .ok)
            #expect(try await balance("topup:\(firstId):ai_requests") == 0)
            #expect(try await balance(window) == 100)

            try await CreditHoldTests.topUp(client, secondId, "ai_requests", 300)
            var claim = try #require(thisMonth.transaction)
            claim.appAccountToken = nil
            claim.signedDate = Int64(Date().timeIntervalSince1970 * 1000)
            let claimed = try await client.postTransaction(try harness.signer.signer.sign(claim), account: second)
            #expect(claimed.status == .ok, "\(String(buffer: claimed.body))")
            #expect(try await flow.detailAnswer().accountId == secondId)

            let firstBefore = try #require(try await CreditHoldTests.remaining(client, firstId, "ai_requests"))
            // Apple reverses the refund: what the claw-back took goes back where it came from — to the window (the
            // new owner's now) and to the first owner's top-up, with the claims and their payments, though the
            // subscription's ledger no longer holds that top-up.
            try await flow.sendProratedRefund(of: refunded, reversed: true)
            #expect(try await flow.detailAnswer().accountId == secondId)
            #expect(try await balance("topup:\(firstId):ai_requests") == 400, "the first owner's top-up")
            #expect(try await balance(window) == 200)
            #expect(try await balance("topup:\(secondId):ai_requests") == 300)
            // Its status, read (and cached) before the reversal, shows the 400 back.
            let remaining = try #require(try await CreditHoldTests.remaining(client, firstId, "ai_requests"))
            #expect(remaining == firstBefore + 400, "the first owner's status: \(remaining), before \(firstBefore)")
            #expect(
                try await harness.count("SELECT count(*) FROM credit_ledger WHERE operation_key LIKE 'reversed:clawback:%'") == 2)
            #expect(
                try await harness.count(
                    "SELECT count(*) FROM credit_ledger WHERE operation_key LIKE 'reversed:claim:clawback:%' AND bucket = 'topup:\(firstId):ai_requests'"
                ) == 2, "the claim and its payment, given back")
            let (status, output) = try await TestProcess.run(
                "storekeeper", ["replay", "--all"], environment: ["DATABASE_URL": harness.databaseURL.urlString])
            #expect(status == 0 && !output.contains("differs"), "replay: \(output)")
        }
    }

    /// Under the transfer policy, two accounts; the first owns a subscription whose last month and this month (1,000
    /// credits) it was sold, has a top-up of 400, and spent 800 of this month's window (the day's free credits first).
    static func withFirstOwner(
        _ body:
            @escaping @Sendable (StorekeeperHarness, any TestClientProtocol, inout LifecycleFlow, UUID, UUID, SimulatedEvent, SimulatedEvent)
            async throws ->
            Void
    ) async throws {
        var environment = CreditHoldTests.environment
        environment["STOREKEEPER_TRANSFER_POLICY"] = "transfer"
        try await StorekeeperHarness.run(environment: environment) { harness in
            try await harness.withHTTP { client in
                let (first, second) = (UUID(), UUID())
                let firstId = first.uuidString.lowercased()
                var flow = LifecycleFlow(harness: harness, client: client, account: first)
                let (lastMonth, thisMonth) = try await flow.sendLastAndThisMonth(now: Int64(Date().timeIntervalSince1970 * 1000))
                // This month's 1,000 and the day's free credits, which a spend takes first.
                let daily = try #require(try await CreditHoldTests.remaining(client, firstId, "ai_requests")) - 1_000
                #expect((0...5).contains(daily), "the day's free credits: \(daily)")
                try await CreditHoldTests.topUp(client, firstId, "ai_requests", 400)
                #expect(try await client.spend(first, amount: 800 + daily, key: "work").status == .ok)
                try await body(harness, client, &flow, first, second, lastMonth, thisMonth)
            }
        }
    }

    /// The sum of `bucket`'s ledger rows.
    static func balance(_ bucket: String, _ harness: StorekeeperHarness) async throws -> Int64 {
        let rows = try await harness.client.query(
            "SELECT coalesce(sum(delta), 0)::bigint FROM credit_ledger WHERE bucket = \(bucket)", logger: TestDatabase.logger)
        for try await sum in rows.decode(Int64.self) { return sum }
        return 0
    }
}
