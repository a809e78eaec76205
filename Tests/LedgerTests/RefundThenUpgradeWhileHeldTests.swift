import Foundation
import HummingbirdTesting
import Testing

@testable import IntegrationSupport

/// A month refunded while two generations held all its window had left and a failed lookup had spent some (so the
/// refund found nothing to take), one generation released before an upgrade, the other and the lookup given back
/// after (issue 53 item 2; found by CreditHoldPropertyTests on CI). The refund
/// stands for the refunded month after the upgrade moves the subscription to a new period, so what the second brings
/// back is the refund's to take as the first's was — under the refund's own key, `<refund>:back:hold-return:<hold>:<n>`,
/// not under the first hold's take (the first refund row after the debit), whose key would then nest the second's and
/// count it as the first hold's. The same when nothing comes back before the upgrade: the refund marked the window it
/// found all out, and the reads name that mark (before 2026-12-05 all three returns lapsed without a take).
@Suite("A refunded window all out in two holds and a spend, one hold released before an upgrade, the rest given back after")
struct RefundThenUpgradeWhileHeldTests {
    @Test(
        "each return is taken under the refund's own key, the customer gets none of the refunded month back, and every hold's ledger rows add up to its answer; the same when nothing came back before the upgrade (the refund's mark names the window)",
        arguments: [true, false])
    func takesAfterAnUpgrade(secondBeforeUpgrade: Bool) async throws {
        try await StorekeeperHarness.run(environment: CreditHoldTests.environment) { harness in
            try await harness.withHTTP { client in
                let account = UUID()
                let id = account.uuidString.lowercased()
                var flow = LifecycleFlow(harness: harness, client: client, account: account)
                flow.subscription.productId = "basic.monthly"
                try await flow.send(.subscribe)
                let all = try #require(try await CreditHoldTests.remaining(client, id, "ai_requests"))
                // A generation of 50, a lookup of 10 that failed (given back later), a generation of the rest.
                let first = try await CreditHoldTests.hold(client, id, "ai_requests", 50, key: "first")
                #expect(try await client.spend(account, amount: 10, key: "lookup").status == .ok)
                let rest = try await CreditHoldTests.hold(client, id, "ai_requests", Int(all) - 60, key: "second")
                #expect(first.status == .created && rest.status == .created, "\(String(buffer: first.body)) \(String(buffer: rest.body))")
                let holds = try [first, rest].map { try $0.answer(CreditHoldAnswer.self).id }
                #expect(try await CreditHoldTests.remaining(client, id, "ai_requests") == 0)
                let refunded = try await flow.send(.refund)
                let revoked = try #require(refunded.transaction?.revocationDate)
                // The refund found the window all out: it marks it (`refund:<period>:<ms>:<bucket>:pending` and the
                // removal's key, netting to nothing), so that the reads name it after the upgrade too, when the
                // subscription no longer names the refunded month (sql/0060) and nothing came back before.
                if secondBeforeUpgrade {
                    let second = try await CreditHoldTests.end(client, hold: holds[1], charge: 0)
                    #expect(second.status == .ok, "\(String(buffer: second.body))")
                }
                try await flow.send(.upgrade, target: "pro.monthly")
                let second = try await CreditHoldTests.end(client, hold: holds[1], charge: 0)
                #expect(second.status == .ok, "\(String(buffer: second.body))")
                let lookup = try await CreditHoldTests.post(client, "/v1/accounts/\(id)/usage/lookup/reverse", "")
                #expect(lookup.status == .ok, "\(String(buffer: lookup.body))")
                let ended = try await CreditHoldTests.end(client, hold: holds[0], charge: 0)
                #expect(ended.status == .ok, "\(String(buffer: ended.body))")
                let takes = try await harness.client.query(
                    """
                    SELECT l.operation_key, l.bucket, b.billing_period FROM credit_ledger l JOIN credit_buckets b ON b.key = l.bucket
                    WHERE l.operation_key LIKE 'refund:%:back:%' ORDER BY l.id
                    """, logger: TestDatabase.logger
                ).collect().map { try $0.decode((String, String, String).self) }
                // Three takes, the second generation's, the lookup's and the first's, each under the refund's key as
                // docs/credits.md gives it: `refund:<period>:<revocation ms>:<bucket>:back:<what gave them back>`.
                #expect(takes.count == 3, "\(takes)")
                for ((take, bucket, period), payer) in zip(takes, ["hold-return:\(holds[1]):0", "reversal:", "hold-return:\(holds[0]):0"]) {
                    #expect(take.hasPrefix("refund:\(period):\(revoked):\(bucket):back:\(payer)"), "a take not under the refund's key: \(take)")
                    #expect(take.components(separatedBy: ":back:").count == 2, "a take under another take: \(take)")
                }
                // The plan's 200 a month were all in the refunded window (basic has no day's credits): what both
                // generations bring back the refund takes, whether it came before the upgrade or after.
                for (ended, amount) in [(second, all - 60), (ended, 50)] {
                    let answer = try ended.answer(CreditHoldAnswer.self)
                    #expect(answer.charged == 0 && answer.returned == 0 && answer.lapsed == amount, "\(answer)")
                }
                let reversal = try lookup.answer(SpendReversalAnswer.self)
                #expect(reversal.returned == 0 && reversal.lapsed == 10, "\(reversal)")
                try await CreditHoldPropertyTests.check(
                    account: id, seen: .init(lapsed: 10, holds: holds), harness: harness, client: client, label: "refund, release, upgrade, release")
                let (replayed, output) = try await TestProcess.run(
                    "storekeeper", ["replay", "--all"], environment: ["DATABASE_URL": harness.databaseURL.urlString])
                #expect(replayed == 0 && !output.contains("differs"), "\(output)")
            }
        }
    }
}
