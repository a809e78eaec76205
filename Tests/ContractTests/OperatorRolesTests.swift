import AppStoreModels
import Application
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Jobs
import NIOCore
import PostgresNIO
import StorekeeperRuntime
import Testing

@testable import IntegrationSupport

/// Operator keys with roles (`name:role:key`) and the audit log, through the real router on a real database. The
/// writes tried are every write operation `docs/openapi.json` lists under `/admin`, so a write added later without a
/// recipe here fails the test instead of going unchecked; the role each needs is the document's `x-storekeeper-role`.
@Suite("Operator roles and the audit log")
struct OperatorRolesTests {
    static let viewer = "viewer-key-0001"
    static let support = "support-key-0001"
    static let admin = "admin-key-0001"
    static let bare = "legacy-bare-admin-key"
    static let environment = OpenAPITests.environment.merging([
        "STOREKEEPER_ADMIN_KEYS": "vera:viewer:\(viewer),sam:support:\(support),ada:admin:\(admin)"
    ]) { _, new in new }

    struct Arguments: Codable { var slot: Int }

    /// A write operation of the document: method, path template, the role it says it needs.
    struct Write: CustomStringConvertible {
        var method: HTTPRequest.Method
        var path: String
        var role: String
        var description: String { "\(method.rawValue) \(path)" }
    }

    static func documentedWrites() throws -> [Write] {
        let paths = try #require(try OpenAPITests.document()["paths"] as? [String: [String: Any]])
        return paths.filter { $0.key.hasPrefix("/admin") }.flatMap { path, item in
            item.compactMap { method, operation -> Write? in
                guard ["post", "put", "patch", "delete"].contains(method), let operation = operation as? [String: Any] else { return nil }
                return Write(
                    method: HTTPRequest.Method(rawValue: method.uppercased())!, path: path, role: operation["x-storekeeper-role"] as? String ?? "none"
                )
            }
        }.sorted { $0.description < $1.description }
    }

    @Test("a viewer key cannot write anything, support only what its role lists, and every change made is in the audit log")
    func roles() async throws {
        // A fake Apple behind the writes that ask it (renewal extensions).
        try await FakeApple.run { apple in try await Self.roles(apple) }
    }

    static func roles(_ apple: FakeApple) async throws {
        try await apple.harness(worker: false, extra: Self.environment) { harness in
            var components = harness.components
            components.devClock = DevClock()
            let queue = components.queue
            func job(failed: Bool) async throws -> Int64 {
                _ = try await queue.client.withConnection {
                    try await queue.enqueue(
                        try NewJob(kind: "roles-test", arguments: Arguments(slot: Int.random(in: 0...1_000_000)), maxAttempts: 1), on: $0)
                }
                let claimed = try #require(try await queue.claim(limit: 1, workerID: UUID()).first)
                if failed {
                    _ = try await queue.fail(claimed, error: "boom", retryAt: nil)
                } else {
                    _ = try await queue.snooze(claimed, until: Date() + 3600)
                }
                return claimed.id
            }
            let (waiting, failedForForm, failedForAPI) = (try await job(failed: false), try await job(failed: true), try await job(failed: true))
            let account = "customer-\(UUID().uuidString.prefix(8))"
            let erasable = "leaving-\(UUID().uuidString.prefix(8))"
            try await Application(router: components.router()).test(.router) { client in
                func headers(_ key: String, form: Bool = false) -> HTTPFields {
                    [.authorization: "Bearer \(key)", .contentType: form ? "application/x-www-form-urlencoded" : "application/json"]
                }
                func grant(_ reason: String) async throws -> String {
                    let response = try await client.execute(
                        uri: "/admin/accounts/\(account)/grants", method: .post, headers: headers(Self.admin),
                        body: ByteBuffer(string: #"{"tier": "pro", "duration": "P30D", "reason": "\#(reason)"}"#))
                    #expect(response.status == .created)
                    return try response.answer(GrantAnswer.self).id
                }
                let (endedByAPI, endedByForm) = (try await grant("to end by the API"), try await grant("to end by the form"))
                // The account to erase holds something (a purchase token): an id that holds nothing is 404.
                let token = try await client.execute(
                    uri: "/v1/accounts/\(erasable)/purchase-intents", method: .post, headers: [.authorization: "Bearer \(StorekeeperHarness.apiKey)"])
                #expect(token.status == .created)
                let events = try await client.execute(uri: "/admin/events?account=\(account)", method: .get, headers: headers(Self.viewer))
                    .answer(EventListAnswer.self)
                let event = try #require(events.events.first?.id)
                // An active App Store subscription of the account, held here and at Apple, for the extension to reach.
                let subscription = "4\(Int.random(in: 100_000_000...999_999_999))"
                let expires = Date().addingTimeInterval(20 * 86_400)
                try await harness.client.query(
                    """
                    INSERT INTO subscriptions (original_transaction_id, account_id, product_id, environment, status, will_renew, is_trial, ownership,
                                               latest_transaction_id, last_event_type, last_signed_date, billing_period, expires_at)
                    VALUES (\(subscription), \(account), 'pro.monthly', 'Sandbox', 'active', true, false, 'PURCHASED', \(subscription), 'SUBSCRIBED', 1,
                            \(subscription), \(expires))
                    """, logger: TestDatabase.logger)
                var transaction = TransactionPayload(
                    transactionId: subscription, originalTransactionId: subscription, productId: "pro.monthly", bundleId: StorekeeperHarness.bundleId,
                    environment: .sandbox, signedDate: nil)
                transaction.expiresDate = Int64(expires.timeIntervalSince1970 * 1000)
                apple.server.state.withLock { $0.subscriptions[subscription] = .init(status: 1, transaction: transaction, renewalInfo: nil) }
                let before = try await Self.state(harness)

                // One request per documented write, each one that would succeed for a key allowed to send it.
                let recipes: [String: (uri: String, body: String?, form: Bool, success: HTTPResponse.Status)] = [
                    "POST /admin/jobs/requeue": ("/admin/jobs/requeue", #"{"ids": [\#(failedForAPI)]}"#, false, .ok),
                    "POST /admin/jobs/{id}/cancel": ("/admin/jobs/\(waiting)/cancel", nil, false, .ok),
                    "POST /admin/jobs/{id}/requeue": ("/admin/jobs/\(failedForForm)/requeue", nil, true, .seeOther),
                    "POST /admin/dev/clock": ("/admin/dev/clock", #"{"advanceSeconds": 1}"#, false, .ok),
                    "POST /admin/events/{id}/redeliver": ("/admin/events/\(event)/redeliver", nil, false, .accepted),
                    "POST /admin/deliveries/{id}/redeliver": ("/admin/deliveries/\(event)/redeliver", nil, true, .seeOther),
                    "POST /admin/accounts/{accountId}/grants": (
                        "/admin/accounts/\(account)/grants", #"{"tier": "max", "duration": "P7D", "reason": "goodwill"}"#, false, .created
                    ),
                    "POST /admin/accounts/{accountId}/grant": (
                        "/admin/accounts/\(account)/grant", "tier=pro&duration=P3M&reason=outage&request=\(UUID().uuidString)", true, .seeOther
                    ),
                    "DELETE /admin/grants/{grantId}": ("/admin/grants/\(endedByAPI)", nil, false, .ok),
                    "POST /admin/grants/{grantId}/end": ("/admin/grants/\(endedByForm)/end", nil, true, .seeOther),
                    "POST /admin/accounts/{accountId}/export": ("/admin/accounts/\(account)/export", nil, true, .ok),
                    "POST /admin/accounts/{accountId}/credits": (
                        "/admin/accounts/\(account)/credits", #"{"meter": "ai_requests", "amount": 50, "reason": "outage on the 3rd"}"#, false,
                        .created
                    ),
                    "POST /admin/accounts/{accountId}/credit": (
                        "/admin/accounts/\(account)/credit", "meter=ai_requests&amount=5&reason=goodwill&request=\(UUID().uuidString)", true,
                        .seeOther
                    ),
                    "POST /admin/accounts/{accountId}/extensions": (
                        "/admin/accounts/\(account)/extensions", #"{"days": 3, "reason": "service_issue_or_outage"}"#, false, .ok
                    ),
                    "POST /admin/accounts/{accountId}/extend": (
                        "/admin/accounts/\(account)/extend", "days=2&reason=other&request=\(UUID().uuidString)", true, .seeOther
                    ),
                    "POST /admin/extensions": (
                        "/admin/extensions", #"{"productId": "pro.monthly", "days": 3, "reason": "other", "dryRun": false}"#, false, .accepted
                    ),
                    "POST /admin/accounts/{accountId}/erase": ("/admin/accounts/\(erasable)/erase", #"{"confirm": "\#(erasable)"}"#, false, .ok),
                    "POST /admin/extend-all": ("/admin/extend-all", "productId=pro.monthly&days=3&reason=other&dryRun=true", true, .seeOther),
                ]
                let writes = try Self.documentedWrites()
                #expect(writes.count == recipes.count, "a write in docs/openapi.json without a recipe here: \(writes)")
                for write in writes { #expect(["support", "admin"].contains(write.role), "\(write) has no x-storekeeper-role") }

                func send(_ write: Write, key: String) async throws -> TestResponse {
                    let recipe = try #require(recipes[write.description], "no recipe for \(write)")
                    return try await client.execute(
                        uri: recipe.uri, method: write.method, headers: headers(key, form: recipe.form),
                        body: recipe.body.map { ByteBuffer(string: $0) })
                }
                for write in writes {
                    let refused = try await send(write, key: Self.viewer)
                    #expect(refused.status == .forbidden, "viewer: \(write)")
                    let error = try refused.answer(ErrorAnswer.self)
                    #expect(error.error == "forbidden", "viewer: \(write)")
                    #expect(error.message.contains("needs the \(write.role) role") == true, "viewer: \(write)")
                    if write.role == "admin" {
                        #expect(try await send(write, key: Self.support).status == .forbidden, "support: \(write)")
                    }
                }
                #expect(try await Self.state(harness) == before, "a refused write changed something")

                // Now each write by the least role allowed: support for its writes, the named admin for the rest.
                for write in writes {
                    let answer = try await send(write, key: write.role == "support" ? Self.support : Self.admin)
                    #expect(answer.status == recipes[write.description]!.success, "\(write): \(String(buffer: answer.body))")
                }
                let actions = try await client.execute(uri: "/admin/audit?limit=1000", method: .get, headers: headers(Self.viewer))
                    .answer(AuditAnswer.self).actions
                // The two fixture grants, then one entry per write.
                #expect(actions.count == writes.count + 2)
                for write in writes {
                    let entry = actions.first { $0.request == write.description }
                    #expect(entry?.operator == (write.role == "support" ? "sam" : "ada"), "\(write)")
                    #expect(entry?.role == write.role, "\(write)")
                }
                let created = try #require(actions.first { $0.action == "grant.create" && $0.operator == "sam" })
                #expect(created.accountId == account)
                #expect(created.before == .null)
                #expect(created.after["tier"] == .string("max"))
                #expect(created.after["createdBy"] == .string("sam"), "grants are made in the operator's name")
                let ended = try #require(actions.first { $0.action == "grant.end" && $0.target == endedByAPI })
                #expect(ended.before["endedAt"] == .null)
                #expect(ended.after["endedAt"]?.string != nil)
                let requeued = try #require(actions.first { $0.action == "jobs.requeue" && $0.target == String(failedForAPI) })
                #expect(requeued.after["count"] == .number(1))
                #expect(actions.contains { $0.action == "job.cancel" && $0.target == String(waiting) })
                #expect(actions.contains { $0.action == "event.redeliver" && $0.target == event })
                #expect(actions.contains { $0.action == "dev.clock.advance" })

                // Sending a finished change again changes nothing, and is not logged: the grant has ended already.
                let again = try await client.execute(uri: "/admin/grants/\(endedByAPI)", method: .delete, headers: headers(Self.support))
                #expect(try again.status == .ok && again.answer(GrantAnswer.self).endedNow == false)
                let after = try await client.execute(uri: "/admin/audit?limit=1000", method: .get, headers: headers(Self.viewer))
                    .answer(AuditAnswer.self)
                #expect(after.actions.count == actions.count)
            }
        }
    }

    /// What a write could change: grants, the audit log, jobs by state, the dev clock's reading.
    static func state(_ harness: StorekeeperHarness) async throws -> [Int] {
        [
            try await harness.count("SELECT count(*) FROM entitlement_sources WHERE ended_at IS NULL"),
            try await harness.count("SELECT count(*) FROM operator_actions"),
            try await harness.count("SELECT count(*) FROM jobs WHERE state = 'available'"),
            try await harness.count("SELECT count(*) FROM jobs WHERE state = 'failed'"),
            try await harness.count("SELECT count(*) FROM webhook_deliveries WHERE state = 'pending'"),
            try await harness.count("SELECT count(*) FROM credit_ledger"),
            try await harness.count("SELECT count(*) FROM renewal_extensions"),
        ]
    }

    @Test("a support key grants for at most 366 days: for life or longer is 403 and grants nothing; an admin key may")
    func supportGrantLimit() async throws {
        try await StorekeeperHarness.run(worker: false, environment: Self.environment) { harness in
            try await harness.withHTTP { client in
                func grant(_ key: String, _ end: String) async throws -> HTTPResponse.Status {
                    try await client.execute(
                        uri: "/admin/accounts/long-grant/grants", method: .post,
                        headers: [.authorization: "Bearer \(key)", .contentType: "application/json"],
                        body: ByteBuffer(string: #"{"tier": "pro", \#(end), "reason": "founder"}"#)
                    ).status
                }
                #expect(try await grant(Self.support, #""lifetime": true"#) == .forbidden)
                #expect(try await grant(Self.support, #""duration": "P2Y""#) == .forbidden)
                #expect(try await harness.count("SELECT count(*) FROM entitlement_sources WHERE account_id = 'long-grant'") == 0)
                #expect(try await grant(Self.support, #""duration": "P1Y""#) == .created)
                #expect(try await grant(Self.admin, #""lifetime": true"#) == .created)
                // The dashboard's form says why on the account page instead.
                let form = try await client.execute(
                    uri: "/admin/accounts/long-grant/grant", method: .post,
                    headers: [.authorization: "Bearer \(Self.support)", .contentType: "application/x-www-form-urlencoded"],
                    body: ByteBuffer(string: "tier=pro&lifetime=true&reason=founder&request=\(UUID().uuidString)"))
                #expect(form.status == .seeOther)
                #expect(form.headers[.location]?.contains("grantError=") == true)
            }
            #expect(try await harness.count("SELECT count(*) FROM entitlement_sources WHERE account_id = 'long-grant'") == 2)
        }
    }

    @Test("the audit log is append-only: UPDATE, DELETE and TRUNCATE are refused by the database itself")
    func appendOnly() async throws {
        // A list of bare keys, as earlier versions took them: each an admin named after its fingerprint.
        let bareKeys = Self.environment.merging(["STOREKEEPER_ADMIN_KEYS": "\(Self.bare),another-legacy-bare-key"]) { $1 }
        try await StorekeeperHarness.run(worker: false, environment: bareKeys) { harness in
            try await harness.withHTTP { client in
                let response = try await client.execute(
                    uri: "/admin/accounts/someone/grants", method: .post,
                    headers: [.authorization: "Bearer \(Self.bare)", .contentType: "application/json"],
                    body: ByteBuffer(string: #"{"tier": "pro", "lifetime": true, "reason": "founder"}"#))
                #expect(response.status == .created)
            }
            #expect(
                try await harness.count("SELECT count(*) FROM operator_actions WHERE operator = '\(OperatorKey.fingerprintName(of: Self.bare))'") == 1
            )
            for statement in ["UPDATE operator_actions SET operator = 'someone-else'", "DELETE FROM operator_actions", "TRUNCATE operator_actions"] {
                await #expect(throws: (any Error).self, "\(statement)") {
                    try await harness.client.query(PostgresQuery(unsafeSQL: statement), logger: TestDatabase.logger)
                }
            }
            #expect(try await harness.count("SELECT count(*) FROM operator_actions WHERE operator LIKE 'key-%'") == 1)
        }
    }

    @Test("GET /admin/audit filters by operator, account and time, answers CSV, and refuses malformed parameters")
    func reading() async throws {
        try await StorekeeperHarness.run(worker: false, environment: Self.environment) { harness in
            try await harness.withHTTP { client in
                func grant(_ account: String, key: String) async throws {
                    let response = try await client.execute(
                        uri: "/admin/accounts/\(account)/grants", method: .post,
                        headers: [.authorization: "Bearer \(key)", .contentType: "application/json"],
                        body: ByteBuffer(string: #"{"tier": "pro", "duration": "P1D", "reason": "=HYPERLINK(\"x\")"}"#))
                    #expect(response.status == .created)
                }
                let start = Date()
                try await grant("alice", key: Self.support)
                try await grant("bob", key: Self.support)
                try await grant("alice", key: Self.admin)
                let viewer: HTTPFields = [.authorization: "Bearer \(Self.viewer)"]
                func count(_ query: String) async throws -> Int? {
                    let response = try await client.execute(uri: "/admin/audit?\(query)", method: .get, headers: viewer)
                    #expect(response.status == .ok, "\(query)")
                    return try response.answer(AuditAnswer.self).actions.count
                }
                #expect(try await count("") == 3)
                #expect(try await count("operator=sam") == 2)
                #expect(try await count("operator=ada&account=alice") == 1)
                #expect(try await count("account=alice") == 2)
                #expect(try await count("account=carol") == 0)
                #expect(try await count("limit=1") == 1)
                let from = (start - 60).formatted(.iso8601)
                let to = (start - 30).formatted(.iso8601)
                #expect(try await count("from=\(from)") == 3)
                #expect(try await count("from=\(from)&to=\(to)") == 0)

                let csv = try await client.execute(uri: "/admin/audit?format=csv&account=alice", method: .get, headers: viewer)
                #expect(csv.status == .ok)
                #expect(csv.headers[.contentType] == "text/csv; charset=utf-8")
                let lines = String(buffer: csv.body).components(separatedBy: "\r\n").filter { !$0.isEmpty }
                #expect(lines.count == 3)
                #expect(lines.first == #""id","at","operator","role","action","request","status","account","target","before","after""#)
                #expect(lines.dropFirst().allSatisfy { $0.contains(#""grant.create","POST /admin/accounts/{accountId}/grants","201","alice""#) })

                for bad in [
                    "format=xml", "from=yesterday", "to=2026-02-30T00:00:00Z", "limit=0", "limit=1001", "operator=",
                    "from=2026-01-02T00:00:00Z&to=2026-01-01T00:00:00Z",
                ] {
                    let response = try await client.execute(uri: "/admin/audit?\(bad)", method: .get, headers: viewer)
                    #expect(response.status == .badRequest, "\(bad)")
                }
                #expect(try await client.execute(uri: "/admin/audit", method: .get, headers: [.authorization: "Bearer nope"]).status == .unauthorized)
                // A browser signs in with Basic, as on the rest of the dashboard.
                let basic = "Basic " + Data("vera:\(Self.viewer)".utf8).base64EncodedString()
                #expect(try await client.execute(uri: "/admin/audit?format=csv", method: .get, headers: [.authorization: basic]).status == .ok)
            }
        }
    }

    @Test("the dashboard says who is signed in, and shows a viewer no buttons it could not use")
    func dashboard() async throws {
        try await StorekeeperHarness.run(worker: false, environment: Self.environment) { harness in
            try await harness.withHTTP { client in
                let granted = try await client.execute(
                    uri: "/admin/accounts/dana/grants", method: .post,
                    headers: [.authorization: "Bearer \(Self.support)", .contentType: "application/json"],
                    body: ByteBuffer(string: #"{"tier": "pro", "duration": "P30D", "reason": "support ticket 42"}"#))
                #expect(granted.status == .created)
                func page(_ key: String) async throws -> String {
                    let basic = "Basic " + Data("anyone:\(key)".utf8).base64EncodedString()
                    let response = try await client.execute(uri: "/admin?account=dana", method: .get, headers: [.authorization: basic])
                    #expect(response.status == .ok)
                    return String(buffer: response.body)
                }
                let asViewer = try await page(Self.viewer)
                #expect(asViewer.contains("signed in as vera (viewer)"))
                #expect(!asViewer.contains("/grant\""), "a viewer sees no grant form")
                #expect(!asViewer.contains("End now"), "a viewer sees no end buttons")
                #expect(asViewer.contains("Operator actions on dana"))
                #expect(asViewer.contains("grant.create") && asViewer.contains("sam (support)"))
                let asSupport = try await page(Self.support)
                #expect(asSupport.contains("signed in as sam (support)"))
                #expect(asSupport.contains("/admin/accounts/dana/grant\"") && asSupport.contains("End now"))
            }
        }
    }

    @Test("STOREKEEPER_ADMIN_KEYS: name:role:key and bare keys; a bad entry stops start-up with one line that never shows a key")
    func configuration() throws {
        let keys = try OperatorKey.keys(from: ["vera:viewer:k1", "sam:support:with:colons"]).get()
        #expect(keys == [OperatorKey(name: "vera", role: .viewer, key: "k1"), OperatorKey(name: "sam", role: .support, key: "with:colons")])
        // A list of bare keys (earlier versions'): admins named after their fingerprints.
        // SHA-256("abc") = ba7816bf 8f01cfea … (FIPS 180-2's first example).
        #expect(try OperatorKey.keys(from: ["abc"]).get() == [OperatorKey(name: "key-ba7816bf", role: .admin, key: "abc")])
        // Short keys are named at start-up.
        #expect(keys.map(\.isShort) == [true, true])
        #expect(OperatorKey(name: "x", role: .admin, key: String(repeating: "k", count: 24)).isShort == false)
        let refused: [(String, [String], String)] = [
            ("unknown role", ["carol:owner:secret-1"], "entry 1: the role is not one of viewer, support, admin"),
            // A bare key with two colons reads as name:role:key; none of its parts may be echoed.
            ("key with colons", ["secret-7a:secret-7b:secret-7c"], "entry 1: the role is not one of"),
            ("two parts", ["carol:secret-2"], "entry 1: give name:role:key"),
            ("bad name", ["ok:admin:k", "car ol:admin:secret-3"], "entry 2: an operator name is 1–64"),
            ("empty key", ["carol:admin:"], "entry 1: an empty key"),
            ("same name", ["carol:admin:secret-4", "carol:viewer:secret-5"], "the name carol is given to more than one key"),
            ("same key", ["a:admin:secret-6", "b:viewer:secret-6"], "the same key is listed more than once"),
            // A named key that held a comma: its tail would be a bare admin key.
            (
                "a key cut at a comma", ["vera:viewer:secret-8aaaaaaaaaaaaaaaaaaaaaa", "secret-8bbbbbbbbbbbbbbbbbbbbbbb"],
                "entry 2: a bare key beside name:role:key entries"
            ),
        ]
        for (what, entries, message) in refused {
            var environment = ["DATABASE_URL": "postgres://localhost/x", "STOREKEEPER_BUNDLE_ID": "com.example.app"]
            environment["STOREKEEPER_ADMIN_KEYS"] = entries.joined(separator: ",")
            let error = #expect(throws: ConfigurationError.self, "\(what)") { try StorekeeperConfiguration.load(environment: environment) }
            let text = error?.description ?? ""
            #expect(text.contains("STOREKEEPER_ADMIN_KEYS: \(message)"), "\(what): \(text)")
            #expect(!text.contains("secret-"), "\(what) shows a key: \(text)")
        }
    }
}
