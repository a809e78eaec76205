import AppStoreModels
import Foundation
import HummingbirdTesting
import LocalSigning
import Persistence
import Subscriptions
import Testing

@testable import IntegrationSupport

/// Account ids are the app's own ids. An app whose ids are not UUIDs asks for a fresh `appAccountToken` per purchase
/// (`POST /v1/accounts/{id}/purchase-intents`) and passes it to StoreKit; Apple's notifications carrying it resolve to
/// the account.
@Suite("The app's own account ids, on real PostgreSQL")
struct AccountIdTests {
    @Test("purchase intents: a numeric account subscribes, a resubscription under another account's token moves it, top-ups follow the token")
    func purchaseIntents() async throws {
        try await StorekeeperHarness.run { harness in
            try await harness.withHTTP { client in
                let first = try await Self.purchaseIntent(client, account: "12345")
                var subscription = harness.subscription(account: first)
                var clock = Date().addingTimeInterval(-3600)
                let subscribed = SimulatedEvent.scenario(.subscribe, subscription: subscription, at: clock)
                #expect(try await client.postNotification(try harness.signer.requestBody(for: subscribed)).status == .ok)
                try await harness.waitApplied(1)
                var status = try await client.getWithKey("/v1/accounts/12345/status").answer(StatusAnswer.self)
                #expect(status.state == "subscribed")
                let detail = try await client.getWithKey("/v1/subscriptions/\(subscription.originalTransactionId)").answer(
                    SubscriptionDetailAnswer.self)
                #expect(detail.accountId == "12345")
                #expect(
                    try await client.getWithKey("/v1/accounts/\(first)/status").answer(StatusAnswer.self).state != "subscribed",
                    "the token is an order number, not an account")

                // The same Apple ID buys again for another of the app's accounts: the subscription follows the purchase.
                clock = clock.addingTimeInterval(60)
                let expired = SimulatedEvent.scenario(
                    .expire, subscription: subscription,
                    currentPeriod: DateInterval(start: clock.addingTimeInterval(-60), end: clock), at: clock)
                #expect(try await client.postNotification(try harness.signer.requestBody(for: expired)).status == .ok)
                clock = clock.addingTimeInterval(60)
                subscription.accountId = try await Self.purchaseIntent(client, account: "user-67890")
                var resubscribed = SimulatedEvent.scenario(.subscribe, subscription: subscription, at: clock)
                resubscribed.subtype = "RESUBSCRIBE"
                #expect(try await client.postNotification(try harness.signer.requestBody(for: resubscribed)).status == .ok)
                try await harness.waitApplied(3)
                #expect(try await client.getWithKey("/v1/accounts/user-67890/status").answer(StatusAnswer.self).state == "subscribed")
                #expect(try await client.getWithKey("/v1/accounts/12345/status").answer(StatusAnswer.self).hadSubscription == false)
                #expect(
                    try await harness.count(
                        "SELECT count(*) FROM account_transfers WHERE from_account = '12345' AND to_account = 'user-67890'") == 1)

                // A consumable bought with a token of the numeric account tops that account up.
                var consumable = TransactionPayload(
                    transactionId: "88000001", originalTransactionId: "88000001", productId: "credits.100",
                    bundleId: StorekeeperHarness.bundleId, environment: .sandbox, signedDate: Int64(clock.timeIntervalSince1970 * 1000))
                consumable.type = "Consumable"
                consumable.appAccountToken = try await Self.purchaseIntent(client, account: "12345").uuidString.lowercased()
                let charge = SimulatedEvent(
                    notificationType: "ONE_TIME_CHARGE", subtype: nil, status: nil, signedDate: consumable.signedDate!,
                    transaction: consumable, renewalInfo: nil)
                #expect(try await client.postNotification(try harness.signer.requestBody(for: charge)).status == .ok)
                try await harness.waitApplied(4)
                status = try await client.getWithKey("/v1/accounts/12345/status").answer(StatusAnswer.self)
                #expect(status.credits["ai_requests"]?.topUp == 100)
            }
        }
    }

    @Test("a claim by an account with a string id; ids that are empty-looking, too long or hold control characters are refused")
    func stringIdsAndBadIds() async throws {
        try await StorekeeperHarness.run { harness in
            try await harness.withHTTP { client in
                let subscription = harness.subscription(account: nil)
                let event = SimulatedEvent.scenario(.subscribe, subscription: subscription, at: Date().addingTimeInterval(-60))
                let claim = try await client.postTransaction(try harness.signer.signer.sign(event.transaction!), account: "ada@example.com")
                #expect(claim.status == .ok)
                #expect(try claim.answer(StatusAnswer.self).state == "subscribed")
                #expect(try await client.getWithKey("/v1/accounts/ada@example.com/status").answer(StatusAnswer.self).state == "subscribed")

                for bad in [String(repeating: "x", count: 129), "bad%01id", "%00"] {
                    let response = try await client.getWithKey("/v1/accounts/\(bad)/status")
                    #expect(response.status == .badRequest, "\(bad.prefix(20)) answered \(response.status)")
                    let intent = try await client.execute(
                        uri: "/v1/accounts/\(bad)/purchase-intents", method: .post,
                        headers: [.authorization: "Bearer \(StorekeeperHarness.apiKey)"])
                    #expect(intent.status == .badRequest)
                }
                #expect(try await client.getWithKey("/v1/accounts/\(String(repeating: "y", count: 128))/status").status == .ok)
                #expect(try await harness.count("SELECT count(*) FROM purchase_intents") == 0)
            }
        }
    }

    @Test("a token's answer is looked up once: the same lookup again is answered from memory, the database not asked")
    func tokensRemembered() async throws {
        try await StorekeeperHarness.run(worker: false) { harness in
            let account = try #require(AccountID("user-1"))
            let issued = try await PurchaseIntents(client: harness.client, logger: TestDatabase.logger).issue(for: account)
            let own = UUID()
            let intents = PurchaseIntents(logger: TestDatabase.logger)
            let tokens = [issued.uuidString, own.uuidString.lowercased(), "not a uuid"]
            let first = try await harness.client.withConnection { try await intents.accounts(ofTokens: tokens, on: $0) }
            #expect(first == [issued.uuidString.lowercased(): account])
            // Were the database asked again it would now answer nothing.
            try await harness.client.query("DELETE FROM purchase_intents", logger: TestDatabase.logger)
            let second = try await harness.client.withConnection { try await intents.accounts(ofTokens: tokens, on: $0) }
            #expect(second == first)
            #expect(
                try await harness.client.withConnection { try await PurchaseIntents(logger: TestDatabase.logger).accounts(ofTokens: tokens, on: $0) }
                    .isEmpty)
        }
    }

    static func purchaseIntent(_ client: any TestClientProtocol, account: String) async throws -> UUID {
        let response = try await client.execute(
            uri: "/v1/accounts/\(account)/purchase-intents", method: .post,
            headers: [.authorization: "Bearer \(StorekeeperHarness.apiKey)"])
        #expect(response.status == .created)
        let intent = try response.answer(PurchaseIntentAnswer.self)
        #expect(intent.accountId == account)
        return try #require(UUID(uuidString: intent.appAccountToken))
    }
}
