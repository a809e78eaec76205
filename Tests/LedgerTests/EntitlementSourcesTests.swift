import AppStoreModels
import Foundation
import HTTPTypes
import HummingbirdTesting
import LocalSigning
import NIOCore
import Testing

@testable import IntegrationSupport

/// Grants, lifetime purchases and subscriptions on one account, through the real router, queue and PostgreSQL: what
/// the customer's app reads in the status, and what the operator sees.
@Suite("Entitlement sources: grants and lifetime purchases beside subscriptions, on real PostgreSQL")
struct EntitlementSourcesTests {
    static let adminKey = "test-admin-key"

    func admin(_ client: any TestClientProtocol, _ method: HTTPRequest.Method, _ uri: String, _ body: String? = nil) async throws -> TestResponse {
        try await client.execute(
            uri: uri, method: method,
            headers: [.authorization: "Bearer \(Self.adminKey)", .contentType: "application/json"],
            body: body.map { ByteBuffer(string: $0) })
    }

    @Test("a grant through the admin API entitles its tier with its features and events; bad grants get 400; DELETE ends it")
    func grantsThroughTheAdminAPI() async throws {
        try await StorekeeperHarness.run(environment: ["STOREKEEPER_ADMIN_KEYS": Self.adminKey]) { harness in
            try await harness.withHTTP { client in
                let account = UUID().uuidString.lowercased()
                let status = { try await client.getWithKey("/v1/accounts/\(account)/status").answer(StatusAnswer.self) }
                #expect(try await status().features == ["model": .text("standard"), "images": .boolean(false), "history_days": .number(7)])

                let created = try await admin(
                    client, .post, "/admin/accounts/\(account)/grants", #"{"tier": "admin", "lifetime": true, "reason": "team account"}"#)
                #expect(created.status == .created)
                let grantId = try created.answer(GrantAnswer.self).id
                let granted = try await status()
                #expect(granted.entitled == true)
                #expect(granted.state == "subscribed")
                #expect(granted.tier == "admin")
                #expect(granted.features == ["model": .text("advanced"), "images": .boolean(true), "history_days": .number(3650)])
                let entitlements = granted.entitlements
                #expect(entitlements.count == 1)
                #expect(entitlements.first?.source == "grant" && entitlements.first?.store == "operator")
                #expect(entitlements.first != nil && entitlements.first?.expiresAt == nil)
                #expect(granted.credits["ai_requests"]?.unlimited == true)
                try await eventually("grant.started stored") {
                    try await harness.count("SELECT count(*) FROM events WHERE type = 'grant.started'") == 1
                }

                // What a stranger or a careless operator might send.
                let future = Date().addingTimeInterval(86_400).formatted(.iso8601)
                for body in [
                    #"{"tier": "platinum", "lifetime": true, "reason": "x"}"#,
                    #"{"tier": "pro", "endsAt": "2001-01-01T00:00:00Z", "reason": "x"}"#,
                    #"{"tier": "pro", "lifetime": true, "reason": "\#(String(repeating: "r", count: 501))"}"#,
                    #"{"tier": "pro", "lifetime": true, "duration": "P30D", "reason": "x"}"#,
                    #"{"tier": "pro", "endsAt": "\#(future)", "duration": "P1D", "reason": "x"}"#,
                    #"{"tier": "pro", "duration": "P0D", "reason": "x"}"#,
                    #"{"tier": "pro", "duration": "30 days", "reason": "x"}"#,
                    #"{"tier": "pro", "lifetime": true}"#,
                    #"{"tier": "pro", "lifetime": true, "reason": "   "}"#,
                    #"{"tier": "pro", "lifetime": false, "reason": "x"}"#,
                    "not json",
                ] {
                    let refused = try await admin(client, .post, "/admin/accounts/\(account)/grants", body)
                    #expect(refused.status == .badRequest, "\(body.prefix(80)): \(refused.status)")
                }
                // Impossible dates are refused, not rolled over; an idempotency key grants once.
                #expect(
                    try await admin(
                        client, .post, "/admin/accounts/\(account)/grants", #"{"tier": "pro", "endsAt": "2099-02-30T00:00:00Z", "reason": "x"}"#
                    ).status == .badRequest)
                #expect(
                    try await admin(client, .post, "/admin/accounts/\(account)/grants", #"{"tier": "pro", "lifetime": true, "reason": "line\nFAKE"}"#)
                        .status == .badRequest)
                #expect(
                    try await admin(client, .post, "/admin/accounts/\(account)/grants", #"{"tier": "pro", "lifetime": true, "reason": "a\u202Eb"}"#)
                        .status == .badRequest)
                let keyed = #"{"tier": "basic", "duration": "P1M", "reason": "retry", "idempotencyKey": "ticket-42"}"#
                let first = try await admin(client, .post, "/admin/accounts/\(account)/grants", keyed)
                let retried = try await admin(client, .post, "/admin/accounts/\(account)/grants", keyed)
                #expect(
                    try first.status == .created && retried.status == .ok && first.answer(GrantAnswer.self).id == retried.answer(GrantAnswer.self).id)
                _ = try await admin(client, .delete, "/admin/grants/\(try first.answer(GrantAnswer.self).id)")
                #expect(try await admin(client, .delete, "/admin/grants/not-a-uuid").status == .badRequest)
                #expect(try await admin(client, .delete, "/admin/grants/\(UUID())").status == .notFound)
                #expect(try await harness.count("SELECT count(*) FROM entitlement_sources") == 2)

                let ended = try await admin(client, .delete, "/admin/grants/\(grantId)")
                #expect(ended.status == .ok)
                #expect(try ended.answer(GrantAnswer.self).status == "ended" && ended.answer(GrantAnswer.self).endedNow == true)
                let after = try await status()
                #expect(after.entitled == false)
                #expect(after.tier == "free")
                #expect(after.entitlements.isEmpty == true)
                #expect(try await harness.count("SELECT count(*) FROM events WHERE type = 'grant.ended'") == 2)
                // Ending twice changes nothing, says so, and emits nothing more.
                #expect(try await admin(client, .delete, "/admin/grants/\(grantId)").answer(GrantAnswer.self).endedNow == false)
                #expect(try await harness.count("SELECT count(*) FROM events WHERE type = 'grant.ended' AND account_id = '\(account)'") == 2)
                let list = try await admin(client, .get, "/admin/accounts/\(account)/grants")
                #expect(try list.answer(GrantListAnswer.self).grants.map(\.status) == ["ended", "ended"])
            }
        }
    }

    /// A grant (max), a lifetime purchase (basic) and a subscription (pro) on one account, ended in every order: the
    /// status always shows the highest tier still held, and free once all have ended.
    @Test("a grant, a lifetime purchase and a subscription at once: right as each ends, in every order")
    func threeSourcesEndInAnyOrder() async throws {
        try await StorekeeperHarness.run(environment: ["STOREKEEPER_ADMIN_KEYS": Self.adminKey]) { harness in
            try await harness.withHTTP { client in
                let orders: [[String]] = [
                    ["grant", "lifetime", "subscription"], ["grant", "subscription", "lifetime"], ["lifetime", "grant", "subscription"],
                    ["lifetime", "subscription", "grant"], ["subscription", "grant", "lifetime"], ["subscription", "lifetime", "grant"],
                ]
                for order in orders {
                    let accountId = UUID()
                    let account = accountId.uuidString.lowercased()
                    var flow = LifecycleFlow(harness: harness, client: client, account: accountId)
                    flow.subscription.productId = "pro.monthly"
                    try await flow.send(.subscribe)
                    var lifetime = TransactionPayload(
                        transactionId: String(Int.random(in: 3_000_000_000...3_999_999_999)), originalTransactionId: "", productId: "basic.lifetime",
                        bundleId: StorekeeperHarness.bundleId, environment: .sandbox, signedDate: Int64(Date().timeIntervalSince1970 * 1000) - 60_000)
                    lifetime.originalTransactionId = lifetime.transactionId
                    lifetime.type = "Non-Consumable"
                    lifetime.purchaseDate = lifetime.signedDate
                    lifetime.inAppOwnershipType = "PURCHASED"
                    #expect(try await client.postTransaction(try harness.signer.signer.sign(lifetime), account: account).status == .ok)
                    let created = try await admin(
                        client, .post, "/admin/accounts/\(account)/grants", #"{"tier": "max", "duration": "P7D", "reason": "outage"}"#)
                    let grantId = try created.answer(GrantAnswer.self).id

                    var held: Set<String> = ["grant", "lifetime", "subscription"]
                    let tierOf = ["grant": ("max", 1), "subscription": ("pro", 2), "lifetime": ("basic", 3)]
                    for source in order {
                        let status = try await client.getWithKey("/v1/accounts/\(account)/status").answer(StatusAnswer.self)
                        let best = held.map { tierOf[$0]! }.min { $0.1 < $1.1 }!.0
                        #expect(status.tier == best, "\(order), holding \(held.sorted())")
                        #expect(
                            status.entitlements.map(\.source).sorted()
                                == held.map { $0 == "lifetime" ? "lifetime" : $0 }.sorted(), "\(order), holding \(held.sorted())")
                        switch source {
                        case "grant":
                            #expect(try await admin(client, .delete, "/admin/grants/\(grantId)").status == .ok)
                        case "lifetime":
                            var refunded = lifetime
                            refunded.revocationDate = Int64(Date().timeIntervalSince1970 * 1000) - 1000
                            refunded.revocationReason = 0
                            refunded.signedDate = refunded.revocationDate
                            let event = SimulatedEvent(
                                notificationType: "REFUND", subtype: nil, status: nil, signedDate: refunded.signedDate!, transaction: refunded,
                                renewalInfo: nil)
                            try await flow.post(event)
                        default:
                            try await flow.send(.refund)
                        }
                        held.remove(source)
                    }
                    let final = try await client.getWithKey("/v1/accounts/\(account)/status").answer(StatusAnswer.self)
                    #expect(final.entitled == false, "\(order)")
                    #expect(final.tier == "free", "\(order)")
                }
            }
        }
    }

    @Test(
        "a lifetime's events once a change, whatever the event store still holds: started once, also after retention deleted it and Apple signed the purchase again; refunded, ended once"
    )
    func lifetimeEventsOnceAChange() async throws {
        try await StorekeeperHarness.run { harness in
            try await harness.withHTTP { client in
                let accountId = UUID()
                let account = accountId.uuidString.lowercased()
                let flow = LifecycleFlow(harness: harness, client: client, account: accountId)
                let now = Int64(Date().timeIntervalSince1970 * 1000)
                var lifetime = TransactionPayload(
                    transactionId: String(Int.random(in: 3_000_000_000...3_999_999_999)), originalTransactionId: "", productId: "basic.lifetime",
                    bundleId: StorekeeperHarness.bundleId, environment: .sandbox, signedDate: now - 60_000)
                lifetime.originalTransactionId = lifetime.transactionId
                lifetime.type = "Non-Consumable"
                lifetime.purchaseDate = lifetime.signedDate
                lifetime.inAppOwnershipType = "PURCHASED"
                func sent(_ type: String) async throws -> Int {
                    try await harness.count("SELECT count(*) FROM events WHERE account_id = '\(account)' AND type = '\(type)'")
                }
                func held(version: Int64) async throws -> Bool {
                    try await harness.count(
                        "SELECT count(*) FROM entitlement_sources WHERE id = '\(lifetime.transactionId)' AND signed_date = \(version)") == 1
                }
                #expect(try await client.postTransaction(try harness.signer.signer.sign(lifetime), account: account).status == .ok)
                try await eventually(timeout: .seconds(20), "purchase.started") { try await sent("purchase.started") == 1 }
                // STOREKEEPER_EVENT_RETENTION_DAYS later the event is gone; the app posts the purchase again as Apple
                // signed it since (a restore): the purchase did not start again.
                try await harness.client.query("DELETE FROM events WHERE account_id = \(account)", logger: TestDatabase.logger)
                var again = lifetime
                again.signedDate = now - 30_000
                #expect(try await client.postTransaction(try harness.signer.signer.sign(again), account: account).status == .ok)
                try await eventually(timeout: .seconds(20), "the later version held") { try await held(version: now - 30_000) }
                #expect(try await sent("purchase.started") == 0)
                // Refunded, in a version of its own: ended once, and not started again first.
                var refunded = again
                refunded.revocationDate = now - 1000
                refunded.revocationReason = 0
                refunded.signedDate = refunded.revocationDate
                try await flow.post(
                    SimulatedEvent(
                        notificationType: "REFUND", subtype: nil, status: nil, signedDate: refunded.signedDate!, transaction: refunded,
                        renewalInfo: nil))
                try await eventually(timeout: .seconds(20), "purchase.ended") { try await sent("purchase.ended") == 1 }
                #expect(try await sent("purchase.started") == 0)
            }
        }
    }
}
