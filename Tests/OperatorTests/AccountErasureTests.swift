import AppStoreModels
import Crypto
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import LocalSigning
import NIOCore
import Persistence
import PostgresNIO
import Subscriptions
import Testing

@testable import IntegrationSupport

/// `POST /admin/accounts/{id}/erase`, judged from outside: afterwards no table — the audit log included — holds the
/// account id, the app's usage key or an operator's words about the customer; the id answers like one never seen; what accounting
/// needs (the subscription, its periods, the revenue figures) stays under a pseudonym, also when Apple keeps signing
/// the old id on renewals.
@Suite("Personal data: erasure")
struct AccountErasureTests {
    static let keys = "sam:support:support-key-erase-0001,ada:admin:admin-key-erase-00001"
    static let admin: HTTPFields = [.authorization: "Bearer admin-key-erase-00001", .contentType: "application/json"]

    /// An App Store subscriber's account erased: its id, its pseudonym, and the account as the app's token.
    static func subscribeAndErase(harness: StorekeeperHarness, client: any TestClientProtocol) async throws
        -> (account: UUID, id: String, pseudonym: AccountID)
    {
        let account = UUID()
        var flow = LifecycleFlow(harness: harness, client: client, account: account)
        try await flow.send(.subscribe)
        let id = account.uuidString.lowercased()
        let erased = try await requestErasure(of: id, client: client)
        #expect(erased.status == .ok, "\(String(buffer: erased.body))")
        return (account, id, try #require(AccountID(try erased.answer(ErasureAnswer.self).pseudonym ?? "")))
    }

    /// `POST /admin/accounts/{id}/erase`, confirmed, as an admin.
    static func requestErasure(of id: String, client: any TestClientProtocol) async throws -> TestResponse {
        try await client.execute(
            uri: "/admin/accounts/\(id)/erase", method: .post, headers: admin, body: ByteBuffer(string: #"{"confirm": "\#(id)"}"#))
    }

    /// Every table (and which) whose rows, as text, contain `needle`.
    static func tablesHolding(_ needle: String, harness: StorekeeperHarness) async throws -> [String] {
        var tables: [String] = []
        for try await table in try await harness.client.query(
            "SELECT table_name::text FROM information_schema.tables WHERE table_schema = 'public' AND table_type = 'BASE TABLE' ORDER BY 1",
            logger: TestDatabase.logger
        ).decode(String.self) { tables.append(table) }
        var holding: [String] = []
        for table in tables {
            let found = try await harness.count("SELECT count(*) FROM \(table) t WHERE strpos(t::text, '\(needle)') > 0")
            if found > 0 { holding.append(table) }
        }
        return holding
    }

    @Test(
        "erase: confirmed by the id, admin only; no table, the audit log included, holds the id or the customer's words; the id answers as unknown; accounting stays under a pseudonym, renewals included; twice is harmless"
    )
    func erase() async throws {
        try await StorekeeperHarness.run(environment: ["STOREKEEPER_ADMIN_KEYS": Self.keys]) { harness in
            try await harness.withHTTP { client in
                let account = UUID()
                let id = account.uuidString.lowercased()
                var flow = LifecycleFlow(harness: harness, client: client, account: account)
                try await flow.send(.subscribe)
                let spend = try await client.execute(
                    uri: "/v1/accounts/\(id)/usage", method: .post,
                    headers: [.authorization: "Bearer \(StorekeeperHarness.apiKey)", .contentType: "application/json"],
                    body: ByteBuffer(string: #"{"meter": "ai_requests", "amount": 2, "idempotencyKey": "app-key-jane-doe-42"}"#))
                #expect(spend.status == .ok, "\(String(buffer: spend.body))")
                let token = try await client.execute(
                    uri: "/v1/accounts/\(id)/purchase-intents", method: .post, headers: [.authorization: "Bearer \(StorekeeperHarness.apiKey)"])
                #expect(token.status == .created)
                let granted = try await client.execute(
                    uri: "/admin/accounts/\(id)/grants", method: .post, headers: Self.admin,
                    body: ByteBuffer(string: #"{"tier": "max", "duration": "P7D", "reason": "Jane Doe wrote in about the outage"}"#))
                #expect(granted.status == .created)
                // An operator's own adjustment key, naming the customer: hashed in the audit log as in the ledger.
                let adjustmentKey = "adj-\(id)-jane"
                let adjusted = try await client.execute(
                    uri: "/admin/accounts/\(id)/credits", method: .post, headers: Self.admin,
                    body: ByteBuffer(
                        string: #"{"meter": "ai_requests", "amount": 5, "reason": "goodwill", "idempotencyKey": "\#(adjustmentKey)"}"#))
                #expect(adjusted.status == .created, "\(String(buffer: adjusted.body))")
                // And a key that is the id itself.
                let keyedById = try await client.execute(
                    uri: "/admin/accounts/\(id)/credits", method: .post, headers: Self.admin,
                    body: ByteBuffer(string: #"{"meter": "ai_requests", "amount": 1, "reason": "goodwill", "idempotencyKey": "\#(id)"}"#))
                #expect(keyedById.status == .created, "\(String(buffer: keyedById.body))")
                let unknownAnswer = try await client.getWithKey("/v1/accounts/never-seen-account/status")
                // The whole answer is compared below, every member the server sends included: kept raw on purpose.
                let unknownStatus = unknownAnswer.json
                // The figures are compared whole below (every member included): read raw on purpose.
                let mrrBefore = try await client.execute(uri: "/admin/analytics/mrr?environment=sandbox", method: .get, headers: Self.admin).json[
                    "series"]
                #expect(try await Self.tablesHolding(id, harness: harness).contains("subscriptions"))

                func erase(_ body: String, _ headers: HTTPFields = Self.admin) async throws -> TestResponse {
                    try await client.execute(uri: "/admin/accounts/\(id)/erase", method: .post, headers: headers, body: ByteBuffer(string: body))
                }
                #expect(try await erase(#"{"confirm": "someone-else"}"#).status == .badRequest)
                #expect(try await erase("{}").status == .badRequest)
                // The account page's form, not confirmed: back to the page, saying so.
                let form = try await client.execute(
                    uri: "/admin/accounts/\(id)/erase", method: .post,
                    headers: [.authorization: "Bearer admin-key-erase-00001", .contentType: "application/x-www-form-urlencoded"],
                    body: ByteBuffer(string: "confirm=not-it"))
                #expect(form.status == .seeOther && form.headers[.location]?.removingPercentEncoding?.contains("Not erased") == true)
                let support: HTTPFields = [.authorization: "Bearer support-key-erase-0001", .contentType: "application/json"]
                #expect(try await erase(#"{"confirm": "\#(id)"}"#, support).status == .forbidden)
                #expect(try await Self.tablesHolding(id, harness: harness).contains("subscriptions"), "nothing erased by a refused request")

                let erased = try await erase(#"{"confirm": "\#(id)"}"#)
                #expect(erased.status == .ok, "\(String(buffer: erased.body))")
                let pseudonym = try #require(try erased.answer(ErasureAnswer.self).pseudonym)
                #expect(UUID(uuidString: pseudonym) != nil && pseudonym != id)
                #expect(try erased.answer(ErasureAnswer.self).alreadyErased == false)

                // No table names the account, or holds what was said about the customer — the audit log included.
                let holding = try await Self.tablesHolding(id, harness: harness)
                #expect(holding.isEmpty, "\(holding)")
                let holdingUpper = try await Self.tablesHolding(id.uppercased(), harness: harness)
                #expect(holdingUpper.isEmpty, "\(holdingUpper)")
                #expect(try await Self.tablesHolding("app-key-jane-doe-42", harness: harness).isEmpty, "the app's usage key")
                #expect(try await Self.tablesHolding("Jane Doe", harness: harness).isEmpty, "the grant's reason")
                #expect(
                    try await harness.count(
                        "SELECT count(*) FROM operator_actions WHERE action = 'credits.adjust' AND target = md5('\(adjustmentKey)') AND account_id = '\(pseudonym)'"
                    ) == 1, "the adjustment's key as the ledger keeps it")
                #expect(
                    try await harness.count(
                        "SELECT count(*) FROM operator_actions WHERE action = 'credits.adjust' AND target = md5('\(id)') AND account_id = '\(pseudonym)'"
                    )
                        == 1, "a key that was the id: hashed as the ledger keeps it too")
                #expect(
                    try await harness.count("SELECT count(*) FROM credit_ledger WHERE operation_key LIKE '%' || md5('\(id)')") == 1,
                    "the ledger's row of that key")
                // The audit log no longer ties the id to the pseudonym; the erasure is in it by the id's digest.
                #expect(
                    try await harness.count(
                        "SELECT count(*) FROM operator_actions WHERE strpos(operator_actions::text, '\(pseudonym)') > 0 AND action = 'account.erase'")
                        == 0)
                let digest = HMAC<SHA256>.authenticationCode(for: Data(id.utf8), using: SymmetricKey(data: Data(StorekeeperHarness.erasureKey.utf8)))
                    .map { String(format: "%02x", $0) }.joined()
                #expect(
                    try await harness.count(
                        "SELECT count(*) FROM operator_actions WHERE action = 'account.erase' AND target = 'hmac-sha256:\(digest)'") == 1)
                #expect(
                    try await harness.count("SELECT count(*) FROM operator_actions WHERE action = 'grant.create' AND account_id = '\(pseudonym)'")
                        == 1)
                // Nothing else may rewrite the log.
                await #expect(throws: (any Error).self) {
                    try await harness.client.query("UPDATE operator_actions SET account_id = 'x'", logger: TestDatabase.logger)
                }
                #expect(
                    try await harness.count(
                        "SELECT count(*) FROM notifications WHERE original_transaction_id = '\(flow.originalTransactionId)' AND (signed_parts IS NOT NULL OR signed_payload IS NOT NULL)"
                    ) == 0)

                // The id answers as one never seen; the pseudonym holds the subscription, and the figures are the same.
                var status = try await client.getWithKey("/v1/accounts/\(id)/status").json
                status.removeValue(forKey: "accountId")
                var unknown = unknownStatus
                unknown.removeValue(forKey: "accountId")
                func sorted(_ object: [String: Any]) throws -> String {
                    String(decoding: try JSONSerialization.data(withJSONObject: object, options: .sortedKeys), as: UTF8.self)
                }
                #expect(try sorted(status) == sorted(unknown))
                let search = try await client.execute(uri: "/admin/search?q=\(id)", method: .get, headers: Self.admin).answer(SearchAnswer.self)
                #expect(search.matches.isEmpty == true)
                #expect(try await client.getWithKey("/v1/accounts/\(pseudonym)/status").answer(StatusAnswer.self).state == "subscribed")
                let mrrAfter = try await client.execute(uri: "/admin/analytics/mrr?environment=sandbox", method: .get, headers: Self.admin).json[
                    "series"]
                #expect(NSArray(array: mrrBefore as? [Any] ?? []).isEqual(to: mrrAfter as? [Any] ?? []), "the figures do not change")

                // Twice: harmless, answered, not logged again.
                let again = try await erase(#"{"confirm": "\#(id)"}"#)
                #expect(try again.status == .ok && again.answer(ErasureAnswer.self).alreadyErased == true)
                #expect(try again.answer(ErasureAnswer.self).pseudonym == nil, "a repeat does not tell the pseudonym again")
                #expect(try await harness.count("SELECT count(*) FROM operator_actions WHERE action = 'account.erase'") == 1)

                // Apple keeps signing the old id on renewals: they are filed under the pseudonym, the notification's stored
                // facts rewritten; only the queue's history of finished jobs (kept 7 days) still has it in the job's arguments.
                let renewal = try await flow.send(.renew)
                #expect(renewal.transaction?.appAccountToken == id)
                #expect(try await harness.count("SELECT count(*) FROM subscriptions WHERE account_id = '\(pseudonym)'") == 1)
                #expect(
                    try await client.getWithKey("/v1/accounts/\(id)/status").answer(StatusAnswer.self).state
                        == unknownAnswer.answer(StatusAnswer.self).state)
                let periods = try await client.getWithKey("/v1/subscriptions/\(flow.originalTransactionId)").answer(SubscriptionDetailAnswer.self)
                #expect(periods.accountId == pseudonym)
                let afterRenewal = try await Self.tablesHolding(id, harness: harness) + Self.tablesHolding(id.uppercased(), harness: harness)
                #expect(Set(afterRenewal).isSubset(of: ["job_history"]), "\(afterRenewal)")

            }
        }
    }

    @Test(
        "erasing accounts named max and ai_requests: their audit entries' accountId becomes the pseudonym, while the grant's tier and the adjustment's meter still say max and ai_requests"
    )
    func auditEntriesKeepWhatTheOperatorDid() async throws {
        try await StorekeeperHarness.run(environment: ["STOREKEEPER_ADMIN_KEYS": Self.keys]) { harness in
            try await harness.withHTTP { client in
                for id in ["max", "ai_requests"] {
                    let granted = try await client.execute(
                        uri: "/admin/accounts/\(id)/grants", method: .post, headers: Self.admin,
                        body: ByteBuffer(string: #"{"tier": "max", "duration": "P7D", "reason": "wrote in"}"#))
                    #expect(granted.status == .created, "\(String(buffer: granted.body))")
                    let adjusted = try await client.execute(
                        uri: "/admin/accounts/\(id)/credits", method: .post, headers: Self.admin,
                        body: ByteBuffer(string: #"{"meter": "ai_requests", "amount": 5, "reason": "goodwill", "idempotencyKey": "k-\#(id)"}"#))
                    #expect(adjusted.status == .created, "\(String(buffer: adjusted.body))")
                }
                for id in ["max", "ai_requests"] {
                    let erased = try await Self.requestErasure(of: id, client: client)
                    #expect(erased.status == .ok, "\(String(buffer: erased.body))")
                    let pseudonym = try #require(try erased.answer(ErasureAnswer.self).pseudonym)
                    let entries = "SELECT count(*) FROM operator_actions WHERE account_id = '\(pseudonym)'"
                    #expect(
                        try await harness.count(
                            "\(entries) AND action = 'grant.create' AND after->>'tier' = 'max' AND after->>'accountId' = '\(pseudonym)' AND after->>'reason' = '(erased)'"
                        ) == 1, "the grant of max still says max")
                    #expect(
                        try await harness.count(
                            "\(entries) AND action = 'credits.adjust' AND after->>'meter' = 'ai_requests' AND after->>'accountId' = '\(pseudonym)'")
                            == 1,
                        "the adjustment of ai_requests still says ai_requests")
                    #expect(try await harness.count("SELECT count(*) FROM operator_actions WHERE after->>'accountId' = '\(id)'") == 0)
                }
            }
        }
    }

    @Test("erase a web customer: Stripe's objects of a one-time payment lose the id and contact details; the sale stays in the revenue figures")
    func eraseWebCustomer() async throws {
        try await StripeWorld.run(extra: ["STOREKEEPER_ADMIN_KEYS": Self.keys]) { world in
            let account = "web-customer-\(UUID().uuidString.prefix(8))"
            _ = try await world.buy("price_basic_lifetime", account: account, at: StripeWorld.time(1))
            for event in world.fake.events { #expect(try await world.deliver(event.body).status == .ok) }
            try await world.settle()
            #expect(try await Self.tablesHolding(account, harness: world.harness).contains("stripe_objects"))
            // Before it, the export holds what the erasure will scrub: every Stripe object and event of the sale (this
            // customer's are all there are yet), the charge of the one-time payment included (it names no account).
            let export = try await world.http.execute(
                uri: "/admin/accounts/\(account)/export", method: .post, headers: Self.admin, body: ByteBuffer(string: "{}"))
            #expect(export.status == .ok, "\(String(buffer: export.body))")
            // `holdings` is open in the contract (the rows as stored): read raw on purpose.
            let holdings = export.json["holdings"] as? [String: Any] ?? [:]
            func ids(_ name: String) -> [String] { (holdings[name] as? [[String: Any]] ?? []).compactMap { $0["id"] as? String }.sorted() }
            #expect(try await ids("stripeObjects") == ErasureFamilyTests.rows("SELECT id FROM stripe_objects", harness: world.harness))
            #expect(try await ids("stripeEvents") == ErasureFamilyTests.rows("SELECT id FROM stripe_events", harness: world.harness))
            #expect(ids("stripeObjects").contains { $0.hasPrefix("ch_") } && !ids("stripeEvents").isEmpty, "\(ids("stripeObjects"))")
            let revenue = try await world.http.execute(
                uri: "/admin/analytics/revenue?from=2026-01-01&to=2026-01-02&environment=sandbox", method: .get, headers: Self.admin)
            let erased = try await Self.requestErasure(of: account, client: world.http)
            #expect(erased.status == .ok, "\(String(buffer: erased.body))")
            let holding = try await Self.tablesHolding(account, harness: world.harness)
            #expect(Set(holding).isSubset(of: ["job_history"]), "\(holding)")
            // Stripe's events are kept as the bytes received: their objects are scrubbed too.
            #expect(
                try await world.harness.count("SELECT count(*) FROM stripe_events WHERE strpos(convert_from(body, 'UTF8'), '\(account)') > 0") == 0)
            #expect(
                try await world.harness.count("SELECT count(*) FROM stripe_events WHERE strpos(convert_from(body, 'UTF8'), 'customer_details') > 0")
                    == 0)
            // An id that only opened a checkout holds that session: it is erased, not "nothing here".
            let opened = "checkout-only-\(UUID().uuidString.prefix(8))"
            let checkout = try await world.post(
                "/v1/accounts/\(opened)/stripe/checkout",
                ["productId": "price_pro_monthly", "successUrl": "https://app.example/ok", "cancelUrl": "https://app.example/no"])
            #expect(checkout.status == .created, "\(String(buffer: checkout.body))")
            let erasedOpened = try await Self.requestErasure(of: opened, client: world.http)
            #expect(erasedOpened.status == .ok, "\(String(buffer: erasedOpened.body))")
            #expect(try await Self.tablesHolding(opened, harness: world.harness).isEmpty)
            #expect(
                try await world.harness.count("SELECT count(*) FROM stripe_objects WHERE body ? 'customer_details' OR body ? 'customer_email'") == 0)
            let after = try await world.http.execute(
                uri: "/admin/analytics/revenue?from=2026-01-01&to=2026-01-02&environment=sandbox", method: .get, headers: Self.admin)
            // The series are compared whole, every member the server sends included: read raw on purpose.
            #expect(revenue.json["series"] as? NSArray == after.json["series"] as? NSArray)
            // The web sale is in the figures (79.99 USD on January 2nd), before the erasure and after it.
            let gross = try revenue.answer(AnalyticsChartAnswer.self).series.first { $0.name == "gross" && $0.currency == "USD" }
            #expect(gross?.points.compactMap { $0.value.map { Int($0) } } == [0, 79990], "\(String(buffer: revenue.body))")
        }
    }

    @Test(
        "erasing the former owner of a subscription another account took, or the one that took it: the other's subscription.transferred event names the pseudonym, in its body and its key, not the id"
    )
    func transferEventsNameThePseudonym() async throws {
        let environment = ["STOREKEEPER_ADMIN_KEYS": Self.keys, "STOREKEEPER_TRANSFER_POLICY": "transfer"]
        try await StorekeeperHarness.run(environment: environment) { harness in
            try await harness.withHTTP { client in
                for erasingTheFormer in [true, false] {
                    let (former, taker) = (UUID(), UUID())
                    var flow = LifecycleFlow(harness: harness, client: client, account: former)
                    try await flow.send(.subscribe)
                    // Renewed under another account's token: it takes the subscription.
                    flow.subscription.accountId = taker
                    try await flow.send(.renew)
                    let transferred =
                        "SELECT count(*) FROM events WHERE type = 'subscription.transferred' AND subscription_id = '\(flow.originalTransactionId)'"
                    #expect(try await harness.count(transferred) == 2, "the transfer's two events, one to each owner")
                    let erased = (erasingTheFormer ? former : taker).uuidString.lowercased()
                    // An event of the same transfer as stored before sql/0013 (jsonb), whose cause holds a value equal to
                    // the erased id that is not about it: only the member naming the other party changes.
                    let other = (erasingTheFormer ? taker : former).uuidString.lowercased()
                    let member = erasingTheFormer ? "fromAccountId" : "toAccountId"
                    try await harness.client.query(
                        """
                        INSERT INTO events (dedup_key, type, account_id, subscription_id, environment, created_at, body)
                        VALUES (\("transferred:\(flow.originalTransactionId):legacy:\(erased):\(other)"), 'subscription.transferred', \(other),
                            \(flow.originalTransactionId), 'Sandbox', now(), jsonb_build_object('change', jsonb_build_object(\(member)::text, \(erased)::text),
                            'cause', jsonb_build_object('transactionId', \(erased)::text)))
                        """, logger: TestDatabase.logger)
                    let answer = try await Self.requestErasure(of: erased, client: client).answer(ErasureAnswer.self)
                    #expect(answer.counts["eventsRewritten"] == 2, "\(answer.counts)")
                    let pseudonym = try #require(answer.pseudonym)
                    // The other account's events as an operator reads them (the feed shows a transaction's events only
                    // once every older one ended, which a loaded cluster may not have reached yet).
                    let recent = try await client.execute(uri: "/admin/events?account=\(other)&limit=50", method: .get, headers: Self.admin)
                    let text = String(buffer: recent.body)
                    #expect(
                        !text.contains("\"\(member)\":\"\(erased)\"") && !text.contains("\"\(member)\": \"\(erased)\"")
                            && text.contains("\"\(member)\":\"\(pseudonym)\""), "\(text)")
                    #expect(
                        try await harness.count(
                            "SELECT count(*) FROM events WHERE body #>> '{change,\(member)}' = '\(pseudonym)' AND body #>> '{cause,transactionId}' = '\(erased)'"
                        )
                            == 1, "the legacy event: its member rewritten, its cause as it was")
                    var keys: [String] = []
                    for try await key in try await harness.client.query(
                        "SELECT type || ' ' || account_id || ' ' || dedup_key FROM events WHERE strpos(dedup_key, \(erased)) > 0",
                        logger: TestDatabase.logger
                    ).decode(String.self) { keys.append(key) }
                    #expect(keys.isEmpty, "\(keys)")
                    #expect(try await harness.count("SELECT count(*) FROM events WHERE dedup_key LIKE 'transferred:%:\(pseudonym):\(other)'") == 2)
                }
            }
        }
    }
}
