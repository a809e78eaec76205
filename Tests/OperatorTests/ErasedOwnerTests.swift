import Foundation
import HummingbirdTesting
import LocalSigning
import NIOCore
import PostgresNIO
import Subscriptions
import Testing

@testable import IntegrationSupport

/// A subscription that first names an erased id: its save asks, in the same statement, whether the owner was erased,
/// and writes nothing under the id when it was (`CreditLedger.DerivationWrites.erasedDigests`).
@Suite("Personal data: a new subscription naming an erased id")
struct ErasedOwnerTests {
    @Test(
        "a first purchase naming an erased id is filed under its pseudonym: no row names the id even for a moment, its facts are rewritten, its analytics contribution recorded, its credits the pseudonym's"
    )
    func firstPurchaseAfterErasure() async throws {
        try await StorekeeperHarness.run(environment: ["STOREKEEPER_ADMIN_KEYS": AccountErasureTests.keys]) { harness in
            try await harness.withHTTP { client in
                let erased = try await AccountErasureTests.subscribeAndErase(harness: harness, client: client)
                // Any write of a subscription row naming the id fails its transaction: the apply would never finish.
                let refusal = """
                    CREATE FUNCTION test_refuse_erased_id() RETURNS trigger LANGUAGE plpgsql AS $$
                    BEGIN
                        IF NEW.account_id = '\(erased.id)' THEN RAISE EXCEPTION 'a subscription row names the erased id'; END IF;
                        RETURN NEW;
                    END $$
                    """
                try await harness.client.query(PostgresQuery(unsafeSQL: refusal), logger: TestDatabase.logger)
                try await harness.client.query(
                    "CREATE TRIGGER test_refuse_erased_id BEFORE INSERT OR UPDATE ON subscriptions FOR EACH ROW EXECUTE FUNCTION test_refuse_erased_id()",
                    logger: TestDatabase.logger)

                let before = try await client.getWithKey("/v1/accounts/\(erased.pseudonym)/status").answer(StatusAnswer.self)
                var second = LifecycleFlow(harness: harness, client: client, account: erased.account)
                let purchase = try await second.send(.subscribe)
                #expect(purchase.transaction?.appAccountToken == erased.id, "Apple signs the id the app gave")
                let originalTransactionId = second.originalTransactionId
                #expect(try await harness.count("SELECT count(*) FROM subscriptions WHERE account_id = '\(erased.pseudonym)'") == 2)
                #expect(
                    try await harness.count(
                        "SELECT count(*) FROM subscriptions WHERE original_transaction_id = '\(originalTransactionId)' AND account_id = '\(erased.pseudonym)'"
                    ) == 1)
                #expect(
                    try await harness.count(
                        "SELECT count(*) FROM notifications WHERE original_transaction_id = '\(originalTransactionId)' AND (signed_parts IS NOT NULL OR signed_payload IS NOT NULL)"
                    ) == 0, "the notification's facts are rewritten as the erasure's were")
                #expect(
                    try await harness.count("SELECT count(*) FROM analytics_contributions WHERE subscription_id = '\(originalTransactionId)'") == 1)
                let holding =
                    try await AccountErasureTests.tablesHolding(erased.id, harness: harness)
                    + AccountErasureTests.tablesHolding(erased.id.uppercased(), harness: harness)
                #expect(Set(holding).isSubset(of: ["job_history"]), "\(holding)")
                let never = try await client.getWithKey("/v1/accounts/never-seen-\(UUID())/status").answer(StatusAnswer.self)
                #expect(try await client.getWithKey("/v1/accounts/\(erased.id)/status").answer(StatusAnswer.self).state == never.state)
                let pseudonymStatus = try await client.getWithKey("/v1/accounts/\(erased.pseudonym)/status").answer(StatusAnswer.self)
                #expect(pseudonymStatus.state == "subscribed")
                let remaining = (before.credits["ai_requests"]?.remaining ?? 0, pseudonymStatus.credits["ai_requests"]?.remaining ?? 0)
                #expect(remaining.1 > remaining.0, "the new cycle's credits are the pseudonym's: \(remaining)")
            }
        }
    }

    @Test(
        "an id used again after its erasure: the app's claim of a new purchase is the id's (200, subscribed, also after a renewal), where the store's repeat of the id alone still goes to the pseudonym"
    )
    func claimAfterErasure() async throws {
        try await StorekeeperHarness.run(environment: ["STOREKEEPER_ADMIN_KEYS": AccountErasureTests.keys]) { harness in
            try await harness.withHTTP { client in
                let erased = try await AccountErasureTests.subscribeAndErase(harness: harness, client: client)
                // A purchase the app sends itself, with no appAccountToken (bought before the app linked it).
                var flow = LifecycleFlow(harness: harness, client: client, account: nil)
                try await flow.send(.subscribe)
                var transaction = try #require(SimulatedEvent.scenario(.subscribe, subscription: flow.subscription, at: Date()).transaction)
                transaction.appAccountToken = nil
                let claimed = try await client.postTransaction(try harness.signer.signer.sign(transaction), account: erased.id)
                #expect(claimed.status == .ok, "\(String(buffer: claimed.body))")
                let status = try claimed.answer(StatusAnswer.self)
                #expect(status.accountId == erased.id && status.state == "subscribed", "the claim's answer: \(status.state)")
                #expect(try await flow.detailAnswer().accountId == erased.id)
                #expect(try await harness.count("SELECT count(*) FROM subscriptions WHERE account_id = '\(erased.pseudonym)'") == 1)
                try await flow.send(.renew)
                #expect(try await flow.detailAnswer().accountId == erased.id, "a renewal keeps the claim's owner")
                #expect(try await client.getWithKey("/v1/accounts/\(erased.id)/status").answer(StatusAnswer.self).state == "subscribed")
                // The erased customer's own subscription, renewed with the id Apple keeps signing: still the pseudonym's.
                var first = LifecycleFlow(harness: harness, client: client, account: erased.account)
                try await first.send(.subscribe)
                #expect(try await first.detailAnswer().accountId == erased.pseudonym.text)
            }
        }
    }
}
