import Foundation
import Subscriptions
import Testing

@testable import IntegrationSupport

@Suite("storekeeper accounts and replay, as processes")
struct AccountsCommandTests {
    @Test("accounts show prints status, events and archive; replay finds a tampered state, --write repairs it")
    func showAndReplay() async throws {
        try await StorekeeperHarness.run { harness in
            let account = UUID()
            let subscription = harness.subscription(account: account)
            let subscriptionId = subscription.originalTransactionId
            try await harness.withHTTP { client in
                var flow = LifecycleFlow(harness: harness, client: client, account: account)
                flow.subscription = subscription
                try await flow.send(.subscribe)
                try await flow.send(.renew)
                try await flow.send(.refund)
            }
            let environment = ["DATABASE_URL": harness.databaseURL.urlString]
            func storekeeper(_ arguments: String...) async throws -> (Int32, String) {
                try await TestProcess.run("storekeeper", arguments, environment: environment)
            }

            let (showStatus, shown) = try await storekeeper("accounts", "show", account.uuidString)
            #expect(showStatus == 0)
            #expect(shown.contains("\"state\" : \"free_with_credits\""))
            #expect(shown.contains("SUBSCRIBED/INITIAL_BUY") && shown.contains("DID_RENEW") && shown.contains("REFUND"))
            #expect(shown.contains("archive (1)") && shown.contains("\(subscriptionId)  REFUND"))
            let (jsonStatus, json) = try await storekeeper("accounts", "show", account.uuidString, "--json")
            #expect(jsonStatus == 0)
            let report = try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any]
            #expect((report?["events"] as? [Any])?.count == 3)

            let (matchStatus, matches) = try await storekeeper("replay", "--subscription", subscriptionId)
            #expect(matchStatus == 0)
            #expect(matches.contains("\(subscriptionId): matches its stored facts"))

            try await harness.client.query(
                "UPDATE subscriptions SET status = 'active', end_reason = NULL WHERE original_transaction_id = \(subscriptionId)",
                logger: TestDatabase.logger)
            let (differStatus, differs) = try await storekeeper("replay", "--account", account.uuidString)
            #expect(differStatus == 3)
            #expect(differs.contains("status: \"active\" → \"refunded\""))
            #expect(differs.contains("endReason: null → \"REFUND\""))
            let (writeStatus, _) = try await storekeeper("replay", "--account", account.uuidString, "--write")
            #expect(writeStatus == 0)
            #expect(try await harness.count("SELECT count(*) FROM subscriptions WHERE status = 'refunded'") == 1)
            #expect(try await harness.count("SELECT count(*) FROM subscription_archive WHERE reason = 'REFUND'") == 1)

            let tooLong = String(repeating: "n", count: 129)
            let (badStatus, bad) = try await storekeeper("accounts", "show", tooLong)
            #expect(
                badStatus == 1
                    && bad.trimmingCharacters(in: .whitespacesAndNewlines)
                        == "storekeeper: the account id must be \(AccountID.rule), got \"\(tooLong)\""
            )
            let (missingStatus, missing) = try await storekeeper("replay", "--subscription", "42")
            #expect(missingStatus == 1 && missing.contains("storekeeper: no subscription 42"))
            let (usageStatus, _) = try await storekeeper("replay")
            #expect(usageStatus != 0)
        }
    }
}
