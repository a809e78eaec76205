import AppStoreModels
import Foundation
import HummingbirdTesting
import LocalSigning
import NIOCore
import Testing

@testable import IntegrationSupport

@Suite("Client-posted transactions and account linking, on real PostgreSQL")
struct ClaimTests {
    /// A signed StoreKit 2 transaction of a fresh subscription, without an appAccountToken.
    func signedTransaction(
        _ harness: StorekeeperHarness, _ subscription: SimulatedEvent.Subscription, at date: Date = Date(),
        adjust: (inout TransactionPayload) -> Void = { _ in }
    ) throws -> String {
        var transaction = SimulatedEvent.scenario(.subscribe, subscription: subscription, at: date).transaction!
        transaction.appAccountToken = nil
        adjust(&transaction)
        return try harness.signer.signer.sign(transaction)
    }

    @Test("an orphan is claimed by the first account; another account gets 409 purchase_owned_elsewhere under keep")
    func keepPolicy() async throws {
        try await StorekeeperHarness.run { harness in
            try await harness.withHTTP { client in
                var flow = LifecycleFlow(harness: harness, client: client, account: nil)
                try await flow.send(.subscribe)
                #expect(try await flow.detailAnswer().accountId == nil)
                let owner = UUID()
                let signed = try signedTransaction(harness, flow.subscription)
                let claimed = try await client.postTransaction(signed, account: owner)
                #expect(claimed.status == .ok)
                #expect(try claimed.answer(StatusAnswer.self).state == "subscribed")
                #expect(try claimed.answer(StatusAnswer.self).accountId == owner.uuidString.lowercased())
                #expect(try await flow.detailAnswer().accountId == owner.uuidString.lowercased())
                #expect(try await client.postTransaction(signed, account: owner).status == .ok)

                let other = UUID()
                let refused = try await client.postTransaction(signed, account: other)
                #expect(refused.status == .conflict)
                #expect(try refused.answer(ErrorAnswer.self).error == "purchase_owned_elsewhere")
                #expect(try await flow.detailAnswer().accountId == owner.uuidString.lowercased())
                #expect(try await client.getWithKey("/v1/accounts/\(other)/status").answer(StatusAnswer.self).state == "free_with_credits")
                #expect(try await harness.count("SELECT count(*) FROM account_transfers") == 0)
            }
        }
    }

    @Test("under transfer, the purchase moves and the move is recorded")
    func transferPolicy() async throws {
        try await StorekeeperHarness.run(environment: ["STOREKEEPER_TRANSFER_POLICY": "transfer"]) { harness in
            try await harness.withHTTP { client in
                let first = UUID()
                let second = UUID()
                var flow = LifecycleFlow(harness: harness, client: client, account: first)
                try await flow.send(.subscribe)
                let moved = try await client.postTransaction(try signedTransaction(harness, flow.subscription), account: second)
                #expect(moved.status == .ok)
                #expect(try moved.answer(StatusAnswer.self).state == "subscribed")
                #expect(try await client.getWithKey("/v1/accounts/\(first)/status").answer(StatusAnswer.self).state == "free_with_credits")
                #expect(
                    try await harness.count(
                        "SELECT count(*) FROM account_transfers WHERE from_account = '\(first.uuidString.lowercased())' AND to_account = '\(second.uuidString.lowercased())'"
                    ) == 1)
                // Apple's later notifications still carry the first account's token: the subscription stays moved.
                try await flow.send(.renew)
                #expect(try await flow.detailAnswer().accountId == second.uuidString.lowercased())
            }
        }
    }

    @Test("a claim before Apple's notification creates the subscription; the notification then applies on top")
    func claimFirst() async throws {
        try await StorekeeperHarness.run { harness in
            try await harness.withHTTP { client in
                let account = UUID()
                var flow = LifecycleFlow(harness: harness, client: client, account: account)
                let claimed = try await client.postTransaction(try signedTransaction(harness, flow.subscription, at: flow.clock), account: account)
                #expect(try claimed.answer(StatusAnswer.self).state == "subscribed")
                try await flow.send(.cancel)
                let status = try await flow.statusAnswer()
                #expect(status.subscription?.willRenew == false)
                #expect(try await flow.detailAnswer().lastEventType == "DID_CHANGE_RENEWAL_STATUS")
            }
        }
    }

    @Test("bad claims: malformed 400, forged 422, another app 422, a consumable 422, a bad account id 400; nothing stored")
    func badClaims() async throws {
        try await StorekeeperHarness.run(worker: false) { harness in
            try await harness.withHTTP { client in
                let account = UUID()
                let subscription = harness.subscription(account: account)
                let stranger = try JWSSigner(chain: try LocalSigningChain.generate())
                var transaction = SimulatedEvent.scenario(.subscribe, subscription: subscription, at: Date()).transaction!
                let forged = try stranger.sign(transaction)
                transaction.bundleId = "com.someone.else"
                let otherApp = try harness.signer.signer.sign(transaction)
                transaction.bundleId = StorekeeperHarness.bundleId
                transaction.type = "Consumable"
                let consumable = try harness.signer.signer.sign(transaction)

                #expect(try await client.postTransaction("not.a.jws", account: account).status == .badRequest)
                let garbage = try await client.execute(
                    uri: "/v1/accounts/\(account)/transactions", method: .post,
                    headers: [.authorization: "Bearer \(StorekeeperHarness.apiKey)"], body: ByteBuffer(string: "{}"))
                #expect(garbage.status == .badRequest)
                for (signed, code) in [(forged, "verification_failed"), (otherApp, "verification_failed"), (consumable, "not_a_subscription")] {
                    let response = try await client.postTransaction(signed, account: account)
                    #expect(response.status == .unprocessableContent)
                    #expect(try response.answer(ErrorAnswer.self).error == code)
                }
                #expect(try await client.execute(uri: "/v1/accounts/\(account)/transactions", method: .post).status == .unauthorized)
                let badAccount = try await client.execute(
                    uri: "/v1/accounts/nope/transactions", method: .post,
                    headers: [.authorization: "Bearer \(StorekeeperHarness.apiKey)"], body: ByteBuffer(string: "{}"))
                #expect(badAccount.status == .badRequest)
            }
            #expect(try await harness.count("SELECT count(*) FROM subscription_events") == 0)
            #expect(try await harness.count("SELECT count(*) FROM subscriptions") == 0)
        }
    }
}
