import Application
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Jobs
import NIOCore
import Persistence
import PostgresNIO
import StorekeeperRuntime
import Testing

@testable import IntegrationSupport

/// The support console: one search box finds an account by any id a customer or the app gives, and the account page
/// shows one timeline of what happened to it — through the real router on a real database, with a real worker.
@Suite("Support console: search and the account timeline")
struct SupportConsoleTests {
    static let keys = ["STOREKEEPER_ADMIN_KEYS": "vera:viewer:viewer-key,sam:support:support-key"]

    @Test("the search finds an account by its id, a subscription's or a renewal's id, a Stripe customer or invoice, a purchase token")
    func search() async throws {
        try await StorekeeperHarness.run(environment: Self.keys) { harness in
            try await harness.withHTTP { client in
                let account = UUID()
                var flow = LifecycleFlow(harness: harness, client: client, account: account)
                try await flow.send(.subscribe)
                let renewal = try #require(try await flow.send(.renew).transaction?.transactionId)
                let token =
                    try await client.execute(
                        uri: "/v1/accounts/token-owner/purchase-intents", method: .post,
                        headers: [.authorization: "Bearer \(StorekeeperHarness.apiKey)"]
                    ).answer(PurchaseIntentAnswer.self).appAccountToken
                // A Stripe subscription as the Stripe worker stores it: its derived row and the objects read from Stripe.
                try await harness.client.query(
                    """
                    INSERT INTO subscriptions (original_transaction_id, account_id, product_id, environment, status, will_renew,
                        is_trial, ownership, latest_transaction_id, last_event_type, last_signed_date, last_event_id, billing_period)
                    VALUES ('sub_1Support', 'web-customer', 'price_pro_monthly', 'Sandbox', 'active', true, false, 'PURCHASED',
                        'in_1Support', 'STRIPE', 1, 'sub_1Support', 'in_1Support')
                    """, logger: TestDatabase.logger)
                try await harness.client.query(
                    """
                    INSERT INTO stripe_objects (id, object, subscription_id, body, read_at) VALUES
                        ('sub_1Support', 'subscription', 'sub_1Support', '{"id": "sub_1Support", "customer": "cus_Support1"}', now()),
                        ('in_1Support', 'invoice', 'sub_1Support', '{"id": "in_1Support", "customer": "cus_Support1"}', now())
                    """, logger: TestDatabase.logger)

                func search(_ text: String) async throws -> [(String, String)] {
                    let query = text.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? text
                    let response = try await client.execute(
                        uri: "/admin/search?q=\(query)", method: .get, headers: [.authorization: "Bearer viewer-key"])
                    #expect(response.status == .ok, "\(text): \(String(buffer: response.body))")
                    return try response.answer(SearchAnswer.self).matches.map { ($0.accountId, $0.matchedBy) }
                }
                let id = account.uuidString.lowercased()
                #expect(try await search(id).map(\.0) == [id])
                #expect(try await search(id).map(\.1) == ["account"])
                #expect(try await search(account.uuidString.uppercased()).map(\.0) == [id], "an upper-case account id")
                #expect(try await search(flow.originalTransactionId).map(\.1) == ["subscription"])
                #expect(try await search(renewal).map(\.0) == [id])
                #expect(try await search(renewal).map(\.1) == ["transaction"])
                #expect(try await search("  \(flow.originalTransactionId)\n").map(\.0) == [id], "pasted with spaces")
                #expect(try await search("sub_1Support").map(\.0) == ["web-customer"])
                #expect(try await search("cus_Support1").map(\.1) == ["stripe_customer"])
                #expect(try await search("in_1Support").map(\.1) == ["stripe_object"])
                #expect(try await search(token).map(\.0) == ["token-owner"])
                #expect(try await search(token.uppercased()).map(\.0) == ["token-owner"])
                #expect(try await search("nobody-at-all").isEmpty)
                for bad in ["", "%20", "a%00b", String(repeating: "x", count: 513)] {
                    #expect(
                        try await client.execute(uri: "/admin/search?q=\(bad)", method: .get, headers: [.authorization: "Bearer viewer-key"]).status
                            == .badRequest, "\(bad)")
                }
                #expect(try await client.execute(uri: "/admin/search?q=x", method: .get).status == .unauthorized)
            }
        }
    }

    @Test(
        "a subscription stored before the search had its table (sql/0027) is found by its renewals' ids once sql/0048's job has walked the subscriptions; the walk files them from the stored facts, once"
    )
    func earlierTransactionsFiled() async throws {
        try await StorekeeperHarness.run(environment: Self.keys) { harness in
            try await harness.withHTTP { client in
                let account = UUID()
                var flow = LifecycleFlow(harness: harness, client: client, account: account)
                try await flow.send(.subscribe)
                let first = try #require(try await flow.send(.renew).transaction?.transactionId)
                let second = try #require(try await flow.send(.renew).transaction?.transactionId)
                func search(_ text: String) async throws -> [String] {
                    try await client.execute(uri: "/admin/search?q=\(text)", method: .get, headers: [.authorization: "Bearer viewer-key"])
                        .answer(SearchAnswer.self).matches.map(\.matchedBy)
                }
                #expect(try await search(first) == ["transaction"])
                // What a database upgraded from before 0027 holds: the subscription, and none of its transactions filed.
                try await harness.client.query("DELETE FROM subscription_transactions", logger: TestDatabase.logger)
                #expect(try await search(first).isEmpty)
                let migration = try String(
                    contentsOf: SchemaMigrator.defaultDirectory().appendingPathComponent("0048_file_earlier_transactions.sql"), encoding: .utf8)
                try await harness.client.query(PostgresQuery(unsafeSQL: migration), logger: TestDatabase.logger)
                try await eventually("the renewals filed by the file-transactions job") {
                    let found = [try await search(first), try await search(second)]
                    return found == [["transaction"], ["transaction"]]
                }
                #expect(
                    try await harness.count(
                        "SELECT count(*) FROM subscription_transactions WHERE original_transaction_id = '\(flow.originalTransactionId)'") == 3)
            }
        }
    }

    @Test(
        "the file-transactions walk goes through every App Store subscription in key order, a batch per job, each batch's successor enqueued in its transaction, and ends after a short batch; other stores' subscriptions are not walked"
    )
    func transactionWalkInBatches() async throws {
        try await StorekeeperHarness.run(worker: false, environment: Self.keys) { harness in
            for (id, store) in [
                ("1005", "app_store"), ("1001", "app_store"), ("1003", "app_store"), ("sub_1Walk", "stripe"), ("1002", "app_store"),
                ("1004", "app_store"),
            ] {
                try await harness.client.query(
                    """
                    INSERT INTO subscriptions (original_transaction_id, account_id, product_id, environment, status, will_renew,
                        is_trial, ownership, latest_transaction_id, last_event_type, last_signed_date, last_event_id, billing_period, store)
                    VALUES (\(id), 'walker', 'pro.monthly', 'Sandbox', 'active', true, false, 'PURCHASED', \(id), 'SUBSCRIBED', 1, 'x', \(id), \(store))
                    """, logger: TestDatabase.logger)
            }
            let queue = harness.components.queue
            _ = try await queue.client.withConnection {
                try await queue.enqueue(
                    try NewJob(
                        kind: TransactionFilingJob.jobKind, arguments: TransactionFilingJob.Arguments(after: ""), uniqueKey: "file-transactions:"),
                    on: $0)
            }
            let walk = TransactionFilingJob(client: harness.client, writer: harness.components.writer, batch: 2, logger: TestDatabase.logger)
            let worker = JobWorker(queue: queue, handlers: [walk], options: .init(pollInterval: .milliseconds(50)), logger: TestDatabase.logger)
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask { try await worker.run() }
                defer { group.cancelAll() }
                try await eventually("the walk to end") {
                    try await harness.count("SELECT count(*) FROM jobs WHERE kind = 'file-transactions'") == 0
                }
            }
            var afters: [String] = []
            for try await after in try await harness.client.query(
                "SELECT args->>'after' FROM job_history WHERE kind = 'file-transactions' AND state = 'completed' ORDER BY id",
                logger: TestDatabase.logger
            ).decode(String.self) { afters.append(after) }
            #expect(afters == ["", "1002", "1004"])
        }
    }

    @Test("the account page, found by a renewal's id, shows one timeline: signed facts, changes with deliveries, credits, operators, newest first")
    func timeline() async throws {
        var environment = Self.keys
        environment["STOREKEEPER_WEBHOOKS"] =
            "{endpoints: [{name: app, url: 'http://127.0.0.1:9/hook', secrets: ['whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw']}]}"
        try await StorekeeperHarness.run(environment: environment) { harness in
            try await harness.withHTTP { client in
                let account = UUID()
                var flow = LifecycleFlow(harness: harness, client: client, account: account)
                try await flow.send(.subscribe)
                let renewal = try #require(try await flow.send(.renew).transaction?.transactionId)
                let spent = try await client.execute(
                    uri: "/v1/accounts/\(account.uuidString.lowercased())/usage", method: .post,
                    headers: [.authorization: "Bearer \(StorekeeperHarness.apiKey)", .contentType: "application/json"],
                    body: ByteBuffer(string: #"{"meter": "ai_requests", "amount": 7, "idempotencyKey": "timeline"}"#))
                #expect(spent.status == .ok)
                let granted = try await client.execute(
                    uri: "/admin/accounts/\(account.uuidString.lowercased())/grants", method: .post,
                    headers: [.authorization: "Bearer support-key", .contentType: "application/json"],
                    body: ByteBuffer(string: #"{"tier": "max", "duration": "P7D", "reason": "sorry for the outage"}"#))
                #expect(granted.status == .created)

                let basic = "Basic " + Data("vera:viewer-key".utf8).base64EncodedString()
                // As a browser submits the search form: spaces pasted around the id arrive as `+`.
                let response = try await client.execute(uri: "/admin?find=+\(renewal)+", method: .get, headers: [.authorization: basic])
                #expect(response.status == .ok)
                let page = String(buffer: response.body)
                #expect(page.contains("found \(renewal) as transaction"))
                #expect(page.contains("Timeline of \(account.uuidString.lowercased())"))
                for kind in ["signed", "change", "credits", "operator"] {
                    #expect(page.contains("<span class=\"kind \(kind)\">\(kind)</span>"), "no \(kind) entry")
                }
                #expect(page.contains("<b>SUBSCRIBED/INITIAL_BUY</b>") && page.contains("<b>DID_RENEW</b>"))
                #expect(page.contains("<b>-7 ai_requests</b>"))
                #expect(page.contains("<b>grant.create</b>") && page.contains("sam (support)"))
                #expect(page.contains("app: pending") || page.contains("app: failed"), "a change shows its webhook delivery")
                // Newest first: the grant came after the renewal was signed.
                let grant = try #require(page.range(of: "<b>grant.create</b>"))
                let renewed = try #require(page.range(of: "<b>DID_RENEW</b>"))
                #expect(grant.lowerBound < renewed.lowerBound)

                let nothing = try await client.execute(uri: "/admin?find=nobody-at-all", method: .get, headers: [.authorization: basic])
                #expect(String(buffer: nothing.body).contains("no account is known by nobody-at-all"))
            }
        }
    }

    @Test("export: everything held about an account as one JSON document, admin only, in the audit log; nothing held is 404")
    func export() async throws {
        let keys = ["STOREKEEPER_ADMIN_KEYS": "sam:support:support-key,ada:admin:admin-key"]
        try await StorekeeperHarness.run(environment: keys) { harness in
            try await harness.withHTTP { client in
                let account = UUID()
                let id = account.uuidString.lowercased()
                var flow = LifecycleFlow(harness: harness, client: client, account: account)
                try await flow.send(.subscribe)
                let service: HTTPFields = [.authorization: "Bearer \(StorekeeperHarness.apiKey)", .contentType: "application/json"]
                #expect(
                    try await client.execute(
                        uri: "/v1/accounts/\(id)/usage", method: .post, headers: service,
                        body: ByteBuffer(string: #"{"meter": "ai_requests", "amount": 3, "idempotencyKey": "export-key-1"}"#)
                    ).status == .ok)
                #expect(
                    try await client.execute(
                        uri: "/v1/accounts/\(id)/consent", method: .put, headers: service, body: ByteBuffer(string: #"{"consented": true}"#)
                    ).status == .ok)
                #expect(
                    try await client.execute(
                        uri: "/admin/accounts/\(id)/grants", method: .post,
                        headers: [.authorization: "Bearer support-key", .contentType: "application/json"],
                        body: ByteBuffer(string: #"{"tier": "max", "duration": "P7D", "reason": "export test reason"}"#)
                    ).status == .created)

                #expect(
                    try await client.execute(uri: "/admin/accounts/\(id)/export", method: .post, headers: [.authorization: "Bearer support-key"])
                        .status == .forbidden)
                let response = try await client.execute(
                    uri: "/admin/accounts/\(id)/export", method: .post, headers: [.authorization: "Bearer admin-key"])
                #expect(response.status == .ok)
                #expect(response.headers[.contentDisposition]?.contains("storekeeper-account-") == true)
                #expect(try response.answer(ExportAnswer.self).accountId == id)
                // `holdings` and `events` are open in the contract (the rows as stored): read raw on purpose.
                let document = response.json
                let holdings = try #require(document["holdings"] as? [String: Any])
                func rows(_ name: String) -> [[String: Any]] { holdings[name] as? [[String: Any]] ?? [] }
                #expect(rows("subscriptions").map { $0["original_transaction_id"] as? String } == [flow.originalTransactionId])
                #expect(rows("notifications").count == 1 && rows("notifications").first?["notification_type"] as? String == "SUBSCRIBED")
                #expect(rows("usageRequests").map { $0["idempotency_key"] as? String } == ["export-key-1"])
                #expect(rows("creditLedger").contains { $0["reason"] as? String == "usage" && ($0["delta"] as? NSNumber)?.intValue == -3 })
                #expect(rows("entitlementSources").contains { $0["reason"] as? String == "export test reason" })
                #expect((holdings["consent"] as? [String: Any])?["consented"] as? Bool == true)
                #expect(rows("operatorActions").contains { $0["action"] as? String == "grant.create" })
                #expect((document["events"] as? [[String: Any]])?.contains { $0["type"] as? String == "subscription.started" } == true)
                #expect(try await harness.count("SELECT count(*) FROM operator_actions WHERE action = 'account.export' AND operator = 'ada'") == 1)

                let nobody = try await client.execute(
                    uri: "/admin/accounts/nobody-at-all/export", method: .post, headers: [.authorization: "Bearer admin-key"])
                #expect(nobody.status == .notFound)
            }
        }
    }

    @Test("credit adjustments: top-up credits added and taken back with a reason, once per key, never below zero, audited, on the timeline")
    func adjustments() async throws {
        try await StorekeeperHarness.run(environment: Self.keys) { harness in
            try await harness.withHTTP { client in
                let support: HTTPFields = [.authorization: "Bearer support-key", .contentType: "application/json"]
                func adjust(_ body: String) async throws -> TestResponse {
                    try await client.execute(
                        uri: "/admin/accounts/goodwill-1/credits", method: .post, headers: support, body: ByteBuffer(string: body))
                }
                let added = try await adjust(#"{"meter": "ai_requests", "amount": 50, "reason": "outage on the 3rd", "idempotencyKey": "ticket-7"}"#)
                #expect(added.status == .created)
                #expect(try added.answer(CreditAdjustmentAnswer.self).topUpBalance == 50 && added.answer(CreditAdjustmentAnswer.self).posted == true)
                let again = try await adjust(#"{"meter": "ai_requests", "amount": 50, "reason": "outage on the 3rd", "idempotencyKey": "ticket-7"}"#)
                #expect(
                    try again.status == .ok && again.answer(CreditAdjustmentAnswer.self).posted == false
                        && again.answer(CreditAdjustmentAnswer.self).topUpBalance == 50)
                let status = try await client.getWithKey("/v1/accounts/goodwill-1/status").answer(StatusAnswer.self)
                #expect(status.credits["ai_requests"]?.topUp == 50, "\(status)")
                #expect(
                    try await adjust(#"{"meter": "ai_requests", "amount": -20, "reason": "given twice"}"#).answer(CreditAdjustmentAnswer.self)
                        .topUpBalance == 30)
                let tooMuch = try await adjust(#"{"meter": "ai_requests", "amount": -31, "reason": "more than is left"}"#)
                #expect(try tooMuch.status == .conflict && tooMuch.answer(ErrorAnswer.self).error == "not_enough_credits")
                for bad in [
                    #"{"meter": "gold", "amount": 5, "reason": "x"}"#, #"{"meter": "ai_requests", "amount": 0, "reason": "x"}"#,
                    #"{"meter": "ai_requests", "amount": 1000001, "reason": "x"}"#, #"{"meter": "ai_requests", "amount": 5}"#,
                    #"{"meter": "ai_requests", "amount": 5, "reason": "  "}"#, #"{"meter": "ai_requests", "amount": 5, "reason": "a\u202eb"}"#,
                    #"{"meter": "ai_requests", "amount": 5.5, "reason": "x"}"#,
                ] {
                    #expect(try await adjust(bad).status == .badRequest, "\(bad)")
                }
                let viewer = try await client.execute(
                    uri: "/admin/accounts/goodwill-1/credits", method: .post,
                    headers: [.authorization: "Bearer viewer-key", .contentType: "application/json"],
                    body: ByteBuffer(string: #"{"meter": "ai_requests", "amount": 5, "reason": "x"}"#))
                #expect(viewer.status == .forbidden)
                // Two adjustments posted (+50, −20): two audit entries with their reasons; the refused ones none.
                let actions = try await client.execute(
                    uri: "/admin/audit?account=goodwill-1", method: .get, headers: [.authorization: "Bearer viewer-key"]
                ).answer(AuditAnswer.self).actions
                #expect(actions.count == 2 && actions.allSatisfy { $0.action == "credits.adjust" && $0.operator == "sam" })
                #expect(actions.compactMap { $0.after["reason"]?.string }.sorted() == ["given twice", "outage on the 3rd"])

                // The dashboard's form: adjusted and back to the page; refused and back with why.
                let basic = "Basic " + Data("sam:support-key".utf8).base64EncodedString()
                let form: HTTPFields = [.authorization: basic, .contentType: "application/x-www-form-urlencoded"]
                let posted = try await client.execute(
                    uri: "/admin/accounts/goodwill-1/credit", method: .post, headers: form,
                    body: ByteBuffer(string: "meter=ai_requests&amount=7&reason=form+goodwill&request=\(UUID().uuidString)"))
                #expect(posted.status == .seeOther && posted.headers[.location] == "/admin?account=goodwill-1")
                let refused = try await client.execute(
                    uri: "/admin/accounts/goodwill-1/credit", method: .post, headers: form,
                    body: ByteBuffer(string: "meter=ai_requests&amount=-1000&reason=too+much&request=\(UUID().uuidString)"))
                #expect(
                    refused.headers[.location]?.contains("creditError=only%2037%20top-up%20credits") == true, "\(refused.headers[.location] ?? "")")
                let page = String(
                    buffer: try await client.execute(uri: "/admin?account=goodwill-1", method: .get, headers: [.authorization: basic]).body)
                #expect(page.contains("<b>+7 ai_requests</b>") && page.contains("operator adjustment") && page.contains("Adjust credits"))
            }
        }
    }
}
