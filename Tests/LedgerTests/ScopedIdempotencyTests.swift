import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import NIOCore
import Testing

@testable import IntegrationSupport

/// The third review: an idempotency key belongs to the account it was sent for. The same key sent to two accounts on
/// every write route that takes one makes two changes (or, where the key is Apple's request identifier, a clear
/// refusal of the second) — never an answer that says a change was made when it was not.
@Suite("Idempotency keys are scoped to their account")
struct ScopedIdempotencyTests {
    static let keys = "vera:viewer:viewer-key-scoped-0001,sam:support:support-key-scoped-0001,ada:admin:admin-key-scoped-00001"
    static func json(_ key: String) -> HTTPFields { [.authorization: "Bearer \(key)", .contentType: "application/json"] }
    static let admin = json("admin-key-scoped-00001")
    static let service = json(StorekeeperHarness.apiKey)

    static func post(_ client: any TestClientProtocol, _ uri: String, _ headers: HTTPFields, _ body: String) async throws -> TestResponse {
        try await client.execute(uri: uri, method: .post, headers: headers, body: ByteBuffer(string: body))
    }

    @Test("the same key on two accounts: two spends, two grants, two adjustments (each in its account's balance and the audit log once)")
    func sameKeyTwoAccounts() async throws {
        try await StorekeeperHarness.run(worker: false, environment: ["STOREKEEPER_ADMIN_KEYS": Self.keys]) { harness in
            try await harness.withHTTP { client in
                let (first, second) = ("la-\(UUID().uuidString.prefix(6))", "lb-\(UUID().uuidString.prefix(6))")
                for account in [first, second] {
                    let adjusted = try await Self.post(
                        client, "/admin/accounts/\(account)/credits", Self.admin,
                        #"{"meter": "ai_requests", "amount": 50, "reason": "goodwill", "idempotencyKey": "shared-adjust"}"#)
                    #expect(adjusted.status == .created, "\(account): \(String(buffer: adjusted.body))")
                    let adjustment = try adjusted.answer(CreditAdjustmentAnswer.self)
                    #expect(adjustment.posted == true && adjustment.topUpBalance == 50)
                    let status = try await client.getWithKey("/v1/accounts/\(account)/status").answer(StatusAnswer.self)
                    #expect(status.credits["ai_requests"]?.topUp == 50, "\(account) holds the 50 credits it was told it got: \(status)")

                    let granted = try await Self.post(
                        client, "/admin/accounts/\(account)/grants", Self.admin,
                        #"{"tier": "pro", "duration": "P7D", "reason": "outage", "idempotencyKey": "shared-grant"}"#)
                    #expect(granted.status == .created, "\(account): \(String(buffer: granted.body))")
                    #expect(try granted.answer(GrantAnswer.self).accountId == account)

                    let spent = try await Self.post(
                        client, "/v1/accounts/\(account)/usage", Self.service,
                        #"{"meter": "ai_requests", "amount": 3, "idempotencyKey": "shared-spend"}"#)
                    #expect(
                        try spent.status == .ok && spent.answer(UsageAnswer.self).meter == "ai_requests", "\(account): \(String(buffer: spent.body))")
                }
                // A take-back under a shared key: each account's own.
                for account in [first, second] {
                    let taken = try await Self.post(
                        client, "/admin/accounts/\(account)/credits", Self.admin,
                        #"{"meter": "ai_requests", "amount": -10, "reason": "mistake", "idempotencyKey": "shared-take"}"#)
                    #expect(
                        try taken.status == .created && taken.answer(CreditAdjustmentAnswer.self).topUpBalance == 40,
                        "\(account): \(String(buffer: taken.body))")
                }
                for account in [first, second] {
                    #expect(
                        try await harness.count("SELECT count(*) FROM operator_actions WHERE action = 'credits.adjust' AND account_id = '\(account)'")
                            == 2)
                    #expect(try await harness.count("SELECT count(*) FROM entitlement_sources WHERE account_id = '\(account)'") == 1)
                    #expect(try await harness.count("SELECT count(*) FROM usage_requests WHERE account_id = '\(account)'") == 1)
                    let ledger = try await harness.count(
                        "SELECT coalesce(sum(l.delta), 0)::bigint FROM credit_ledger l JOIN credit_buckets b ON b.key = l.bucket WHERE b.account_id = '\(account)' AND b.kind = 'topup'"
                    )
                    #expect(ledger == 40, "\(account)'s top-up ledger")
                }
                // The same key again on one account is its replay: nothing more.
                let replay = try await Self.post(
                    client, "/admin/accounts/\(first)/credits", Self.admin,
                    #"{"meter": "ai_requests", "amount": 50, "reason": "goodwill", "idempotencyKey": "shared-adjust"}"#)
                #expect(try replay.status == .ok && replay.answer(CreditAdjustmentAnswer.self).posted == false)
                // The same key for another amount is not that adjustment: refused, as a spend's is.
                let other = try await Self.post(
                    client, "/admin/accounts/\(first)/credits", Self.admin,
                    #"{"meter": "ai_requests", "amount": 7, "reason": "goodwill", "idempotencyKey": "shared-adjust"}"#)
                #expect(
                    try other.status == .unprocessableContent && other.answer(ErrorAnswer.self).error == "idempotency_key_reused",
                    "\(String(buffer: other.body))")
            }
        }
    }
}
