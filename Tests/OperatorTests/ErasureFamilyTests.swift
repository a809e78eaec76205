import Application
import Crypto
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import NIOCore
import PostgresNIO
import Testing

@testable import IntegrationSupport

/// Erasure of one account among ids that contain each other (`x`, `x2`, `X`, `x:y`, `x%`, `x_`), judged from outside
/// (the third review): every other account's export — each of its rows in every table, byte for byte — its pending jobs
/// and every audit entry not about the erased account are the same afterwards; an id that holds nothing (an operator's
/// name, a customer never seen) is 404 and leaves no trace; a failure inside an erasure is a 500 and changes nothing;
/// only an erasure may rewrite the audit log, and only the erased account's entries.
@Suite("Personal data: erasure matches ids exactly")
struct ErasureFamilyTests {
    static let keys = "sam:support:support-key-family-0001,ada:admin:admin-key-family-00001"
    static let erasureKey = "erasure-key-for-the-family-tests-0123456789"
    static let environment = ["STOREKEEPER_ADMIN_KEYS": keys, "STOREKEEPER_ERASURE_KEY": erasureKey]
    static let admin: HTTPFields = [.authorization: "Bearer admin-key-family-00001", .contentType: "application/json"]
    static let service: HTTPFields = [.authorization: "Bearer \(StorekeeperHarness.apiKey)", .contentType: "application/json"]

    /// An id as a path segment: everything but letters and digits percent-encoded (`%` itself, `:`, `_`).
    static func path(_ id: String) -> String { id.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? id }

    static func post(_ client: any TestClientProtocol, _ uri: String, _ headers: HTTPFields, _ body: String) async throws -> TestResponse {
        try await client.execute(uri: uri, method: .post, headers: headers, body: ByteBuffer(string: body))
    }

    /// One customer's life: a free-tier spend, an operator's grant and adjustment whose reasons name them, holds (one
    /// settled, one open) and the first spend given back, an Apple subscription bought with a purchase token, and a
    /// spend of its credits.
    static func seed(_ id: String, index: Int, flows: Bool, harness: StorekeeperHarness, client: any TestClientProtocol) async throws {
        let account = "/v1/accounts/\(path(id))"
        let free = try await post(client, "\(account)/usage", service, #"{"meter": "ai_requests", "amount": 1, "idempotencyKey": "free-\#(index)"}"#)
        #expect(free.status == .ok, "\(id): \(String(buffer: free.body))")
        let grant = try await post(
            client, "/admin/accounts/\(path(id))/grants", admin, #"{"tier": "max", "duration": "P7D", "reason": "Customer \#(index) wrote in"}"#)
        #expect(grant.status == .created, "\(id): \(String(buffer: grant.body))")
        let adjusted = try await post(
            client, "/admin/accounts/\(path(id))/credits", admin,
            #"{"meter": "ai_requests", "amount": \#(40 + index), "reason": "goodwill \#(index)", "idempotencyKey": "adjust-\#(index)"}"#)
        #expect(adjusted.status == .created, "\(id): \(String(buffer: adjusted.body))")
        // Credits around AI work: a hold settled in part, one still held, and the first spend given back.
        let held = try await post(client, "\(account)/holds", service, #"{"meter": "ai_requests", "amount": 3, "idempotencyKey": "gen-\#(index)"}"#)
        #expect(held.status == .created, "\(id): \(String(buffer: held.body))")
        let settled = try await post(client, "\(account)/holds/gen-\(index)/settle", service, #"{"amount": 1}"#)
        #expect(settled.status == .ok, "\(id): \(String(buffer: settled.body))")
        let open = try await post(
            client, "\(account)/holds", service, #"{"meter": "ai_requests", "amount": 2, "idempotencyKey": "open-\#(index)", "expiresIn": 86400}"#)
        #expect(open.status == .created, "\(id): \(String(buffer: open.body))")
        let reversed = try await post(client, "\(account)/usage/free-\(index)/reverse", service, "")
        #expect(reversed.status == .ok, "\(id): \(String(buffer: reversed.body))")
        // A consent the customer rescinded (Apple's RESCIND_CONSENT), linked to the account.
        _ = try await rows(
            """
            INSERT INTO consent_rescissions (notification_uuid, app_transaction_id, environment, rescinded_at, account_id, linked_at)
            VALUES (\(quoted(UUID().uuidString.lowercased())), '70428957231147\(index)', 'Sandbox', now(), \(quoted(id)), now()) RETURNING account_id
            """, harness: harness)
        // An answer to Apple's retention request about the customer's subscription.
        _ = try await rows(
            """
            INSERT INTO retention_decisions (request_identifier, original_transaction_id, account_id, environment, product_id, rule, answer_kind,
                answer, signed_date, decided_at)
            VALUES (\(quoted(UUID().uuidString.lowercased())), '20000000\(index)', \(quoted(id)), 'Sandbox', 'pro.monthly', 'idle', 'message',
                '{"message": {"messageIdentifier": "m"}}', 0, now()) RETURNING account_id
            """, harness: harness)
        guard flows else { return }
        let intent = try await post(client, "\(account)/purchase-intents", service, "")
        let token = try #require(UUID(uuidString: try intent.answer(PurchaseIntentAnswer.self).appAccountToken), "\(String(buffer: intent.body))")
        var flow = LifecycleFlow(harness: harness, client: client, account: token)
        try await flow.send(.subscribe)
        let paid = try await post(client, "\(account)/usage", service, #"{"meter": "ai_requests", "amount": 2, "idempotencyKey": "paid-\#(index)"}"#)
        #expect(paid.status == .ok, "\(id): \(String(buffer: paid.body))")
    }

    /// The account's export without what changes by exporting: the time, and the audit log's entries of exports.
    static func export(_ id: String, client: any TestClientProtocol) async throws -> String? {
        let response = try await post(client, "/admin/accounts/\(path(id))/export", admin, "{}")
        guard response.status == .ok else {
            #expect(response.status == .notFound, "\(id): \(String(buffer: response.body))")
            return nil
        }
        // The whole document is compared, every member the server sends included: read raw on purpose.
        var document = response.json
        document.removeValue(forKey: "exportedAt")
        if var holdings = document["holdings"] as? [String: Any] {
            holdings["operatorActions"] = (holdings["operatorActions"] as? [[String: Any]])?.filter { $0["action"] as? String != "account.export" }
            document["holdings"] = holdings
        }
        return String(decoding: try JSONSerialization.data(withJSONObject: document, options: [.sortedKeys]), as: UTF8.self)
    }

    /// Rows of a query, as text, sorted.
    static func rows(_ sql: String, harness: StorekeeperHarness) async throws -> [String] {
        var rows: [String] = []
        for try await row in try await harness.client.query(PostgresQuery(unsafeSQL: sql), logger: TestDatabase.logger).decode(String.self) {
            rows.append(row)
        }
        return rows.sorted()
    }

    /// Every row of every table, as text: what "no trace" is judged by.
    static func database(harness: StorekeeperHarness) async throws -> [String: [String]] {
        var tables: [String: [String]] = [:]
        for table in try await rows(
            "SELECT table_name::text FROM information_schema.tables WHERE table_schema = 'public' AND table_type = 'BASE TABLE'", harness: harness)
        {
            tables[table] = try await rows("SELECT t::text FROM \(table) t", harness: harness)
        }
        return tables
    }

    static func quoted(_ text: String) -> String { "'" + text.replacingOccurrences(of: "'", with: "''") + "'" }

    @Test(
        "erasing each of x, X, x_, x%, x:y, x2 in turn leaves every other account's rows, pending jobs and audit entries byte for byte as they were; an operator's name or an id never seen is 404 and that customer can still buy"
    )
    func family() async throws {
        try await StorekeeperHarness.run(environment: Self.environment) { harness in
            try await harness.withHTTP { client in
                let base = "fam" + String((0..<5).map { _ in "abcdefghijklmnopqrstuvwxyz".randomElement()! })
                let family = [base, base + "2", base.uppercased(), base + ":y", base + "%", base + "_"]
                for (index, id) in family.enumerated() { try await Self.seed(id, index: index, flows: true, harness: harness, client: client) }
                var remaining = family
                for id in [base, base.uppercased(), base + "_", base + "%", base + ":y", base + "2"] {
                    remaining.removeAll { $0 == id }
                    var exports: [String: String?] = [:]
                    for other in remaining { exports[other] = try await Self.export(other, client: client) }
                    let others = remaining.map(Self.quoted).joined(separator: ",")
                    let jobsSQL =
                        "SELECT j::text FROM jobs j WHERE concurrency_key IN (SELECT 'account:' || a FROM unnest(ARRAY[\(others)]::text[]) a)"
                    let jobs = try await Self.rows(jobsSQL, harness: harness)
                    #expect(jobs.count == remaining.count, "each grant's end is a pending job of its account")
                    let last = try await harness.count("SELECT coalesce(max(id), 0) FROM operator_actions")
                    let audit = try await Self.rows(
                        "SELECT a::text FROM operator_actions a WHERE account_id IS DISTINCT FROM \(Self.quoted(id))", harness: harness)

                    let erased = try await Self.post(client, "/admin/accounts/\(Self.path(id))/erase", Self.admin, #"{"confirm": "\#(id)"}"#)
                    #expect(erased.status == .ok, "\(id): \(String(buffer: erased.body))")
                    let pseudonym = (try? erased.answer(ErasureAnswer.self))?.pseudonym ?? "-"

                    for other in remaining {
                        let after = try await Self.export(other, client: client)
                        #expect(after == exports[other] ?? nil, "erasing \(id) changed \(other)'s rows")
                    }
                    #expect(try await Self.rows(jobsSQL, harness: harness) == jobs, "erasing \(id) changed other accounts' jobs")
                    let auditAfter = try await Self.rows(
                        "SELECT a::text FROM operator_actions a WHERE account_id IS DISTINCT FROM \(Self.quoted(pseudonym)) AND id <= \(last)",
                        harness: harness)
                    #expect(auditAfter == audit, "erasing \(id) changed other accounts' audit entries")
                    #expect(try await Self.export(id, client: client) == nil, "\(id) holds nothing after its erasure")
                }

                // An operator's name and an id never seen hold nothing here: 404, and the audit log is as it was.
                let nobody = "nobody-\(base)"
                let audit = try await Self.rows("SELECT a::text FROM operator_actions a", harness: harness)
                for id in ["sam", "ada", nobody] {
                    let response = try await Self.post(client, "/admin/accounts/\(id)/erase", Self.admin, #"{"confirm": "\#(id)"}"#)
                    #expect(
                        try response.status == .notFound && response.answer(ErrorAnswer.self).error == "not_found",
                        "\(id): \(String(buffer: response.body))")
                }
                #expect(try await Self.rows("SELECT a::text FROM operator_actions a", harness: harness) == audit)
                // The customer never seen buys later: their purchase is theirs, not a pseudonym's.
                let intent = try await Self.post(client, "/v1/accounts/\(nobody)/purchase-intents", Self.service, "")
                let token = try #require(UUID(uuidString: try intent.answer(PurchaseIntentAnswer.self).appAccountToken))
                var flow = LifecycleFlow(harness: harness, client: client, account: token)
                try await flow.send(.subscribe)
                #expect(try await client.getWithKey("/v1/accounts/\(nobody)/status").answer(StatusAnswer.self).state == "subscribed")
            }
        }
    }

    @Test(
        "Play purchases naming x, x2, X, x_, x% by obfuscatedExternalAccountId: erasing each in turn leaves the others' exports and Play rows as they were"
    )
    func playFamily() async throws {
        try await GooglePlayWorld.run(extra: Self.environment) { world in
            let base = "play" + String((0..<5).map { _ in "abcdefghijklmnopqrstuvwxyz".randomElement()! })
            let family = [base, base + "2", base.uppercased(), base + "_", base + "%"]
            for id in family {
                _ = try await world.push(world.fake.buy(GooglePlayWorld.monthly, accountToken: id, at: world.clock.now).notification)
                _ = try await world.push(world.fake.buyProduct("basic_lifetime", accountToken: id, at: world.clock.now).notification)
                _ = try await world.push(world.fake.buyProduct("credits_100", accountToken: id, at: world.clock.now).notification)
            }
            try await world.settle()
            func playRows(_ ids: [String]) async throws -> [String] {
                let named = "ARRAY[\(ids.map(Self.quoted).joined(separator: ","))]::text[]"
                return try await Self.rows(
                    """
                    SELECT t::text FROM google_subscriptions t WHERE account_token = ANY(\(named))
                    UNION ALL SELECT r::text FROM google_subscription_reads r
                        WHERE purchase_token IN (SELECT unnest(tokens) FROM google_subscriptions WHERE account_token = ANY(\(named)))
                    UNION ALL SELECT p::text FROM google_products p WHERE account_token = ANY(\(named)) OR purchased_account_token = ANY(\(named))
                    """, harness: world.harness)
            }
            #expect(try await playRows([base]).count >= 4, "a subscription, its read, two one-time products")
            var remaining = family
            for id in [base, base.uppercased(), base + "_", base + "%", base + "2"] {
                remaining.removeAll { $0 == id }
                var exports: [String: String?] = [:]
                for other in remaining { exports[other] = try await Self.export(other, client: world.http) }
                let rows = try await playRows(remaining)
                let erased = try await Self.post(world.http, "/admin/accounts/\(Self.path(id))/erase", Self.admin, #"{"confirm": "\#(id)"}"#)
                #expect(erased.status == .ok, "\(id): \(String(buffer: erased.body))")
                for other in remaining {
                    let after = try await Self.export(other, client: world.http)
                    #expect(after == exports[other] ?? nil, "erasing \(id) changed \(other)'s export")
                    #expect(after?.contains("basic_lifetime") == true, "\(other)'s export holds its Play unlock")
                }
                #expect(try await playRows(remaining) == rows, "erasing \(id) changed other accounts' Play rows")
                #expect(try await playRows([id]).isEmpty, "no Play row names \(id) after its erasure")
                #expect(try await Self.export(id, client: world.http) == nil, "\(id) holds nothing after its erasure")
            }
            // Play still names the erased ids: a sync reads every purchase again, and none of them comes back.
            let sync = GooglePlaySync(
                client: world.harness.client, subscriptions: world.harness.components.googlePlaySubscriptions,
                products: world.harness.components.googlePlayProducts, logger: TestDatabase.logger)
            #expect(try await sync.sync(tokens: nil).read == 15)
            #expect(try await playRows(family).isEmpty, "a sync after the erasures brings no erased id back")
            for table in ["google_products", "google_subscription_reads"] {
                let named = try await world.harness.count("SELECT count(*) FROM \(table) WHERE convert_from(body, 'UTF8') ILIKE '%\(base)%'")
                #expect(named == 0, "\(table): a read's body names an erased id")
            }
        }
    }

    @Test("an id that holds nothing is 404 and leaves every table as it was, beside an account it is a prefix of")
    func holdsNothing() async throws {
        try await StorekeeperHarness.run(worker: false, environment: Self.environment) { harness in
            try await harness.withHTTP { client in
                let held = "hn\(Int.random(in: 1000...9999))"
                try await Self.seed(held + "2", index: 1, flows: false, harness: harness, client: client)
                let before = try await Self.database(harness: harness)
                for id in [held, "sam", held.uppercased()] {
                    let response = try await Self.post(client, "/admin/accounts/\(id)/erase", Self.admin, #"{"confirm": "\#(id)"}"#)
                    #expect(response.status == .notFound, "\(id): \(String(buffer: response.body))")
                }
                let after = try await Self.database(harness: harness)
                for (table, rows) in before { #expect(after[table] == rows, "\(table) changed") }
            }
        }
    }

    @Test("a failure inside an erasure is a 500 with its cause logged, not a 503, and changes nothing")
    func failureInside() async throws {
        try await StorekeeperHarness.run(worker: false, environment: Self.environment) { harness in
            try await harness.withHTTP { client in
                let id = "fails\(Int.random(in: 1000...9999))"
                try await Self.seed(id, index: 1, flows: false, harness: harness, client: client)
                // A statement of the erasure fails (here: a trigger the test adds refuses the usage answers' deletion).
                try await harness.client.query(
                    """
                    CREATE FUNCTION erasure_test_refuses() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'refused by the test'; END $$
                    """, logger: TestDatabase.logger)
                try await harness.client.query(
                    "CREATE TRIGGER erasure_test_refuses BEFORE DELETE ON usage_requests FOR EACH ROW EXECUTE FUNCTION erasure_test_refuses()",
                    logger: TestDatabase.logger)
                let before = try await Self.database(harness: harness)
                let response = try await Self.post(client, "/admin/accounts/\(id)/erase", Self.admin, #"{"confirm": "\#(id)"}"#)
                #expect(response.status == .internalServerError, "\(String(buffer: response.body))")
                #expect(try response.answer(ErrorAnswer.self).error == "erasure_failed")
                let after = try await Self.database(harness: harness)
                for (table, rows) in before where table != "operator_actions" { #expect(after[table] == rows, "\(table) changed") }
                #expect(after["operator_actions"] == before["operator_actions"], "a failed erasure is not in the audit log")
            }
        }
    }

    @Test(
        "the audit log: the old setting no longer opens it; only an erasure rewrites, only its account's entries; the erasure is logged by a keyed digest"
    )
    func auditGuard() async throws {
        try await StorekeeperHarness.run(worker: false, environment: Self.environment) { harness in
            try await harness.withHTTP { client in
                let id = "guarded\(Int.random(in: 1000...9999))"
                try await Self.seed(id, index: 1, flows: false, harness: harness, client: client)
                try await Self.seed(id + "-other", index: 2, flows: false, harness: harness, client: client)
                // Any session of the app's role could set the old flag and rewrite the log.
                await #expect(throws: (any Error).self) {
                    try await harness.client.withTransaction(logger: TestDatabase.logger) { connection in
                        try await connection.query("SET LOCAL storekeeper.erasing = 'on'", logger: TestDatabase.logger)
                        try await connection.query("UPDATE operator_actions SET target = 'forged'", logger: TestDatabase.logger)
                    }
                }
                // The erasure's function itself refuses an account no erasure of this transaction filed.
                await #expect(throws: (any Error).self) {
                    let rows = try await harness.client.query(
                        "SELECT erase_operator_actions(\(id), \(UUID().uuidString.lowercased()))", logger: TestDatabase.logger)
                    for try await _ in rows {}
                }
                #expect(try await harness.count("SELECT count(*) FROM operator_actions WHERE target = 'forged'") == 0)

                let erased = try await Self.post(client, "/admin/accounts/\(id)/erase", Self.admin, #"{"confirm": "\#(id)"}"#)
                #expect(erased.status == .ok)
                let plain = SHA256.hash(data: Data(id.utf8)).map { String(format: "%02x", $0) }.joined()
                let keyed = HMAC<SHA256>.authenticationCode(for: Data(id.utf8), using: SymmetricKey(data: Data(Self.erasureKey.utf8)))
                    .map { String(format: "%02x", $0) }.joined()
                #expect(try await harness.count("SELECT count(*) FROM operator_actions WHERE strpos(operator_actions::text, '\(plain)') > 0") == 0)
                #expect(
                    try await harness.count(
                        "SELECT count(*) FROM operator_actions WHERE action = 'account.erase' AND target = 'hmac-sha256:\(keyed)'") == 1)
                #expect(try await harness.count("SELECT count(*) FROM erased_accounts WHERE account_digest = '\(plain)'") == 0)
                // The other account's entries are untouched, the reasons included.
                #expect(
                    try await harness.count(
                        "SELECT count(*) FROM operator_actions WHERE account_id = '\(id)-other' AND after::text LIKE '%goodwill 2%'") == 1)
            }
        }
    }
    @Test(
        "an id used again after its erasure — the same spend key, today's daily grant again — is erased again; a repeat that finds nothing does not tell the pseudonym; an upper-case UUID confirms its account"
    )
    func eraseAgainAfterReuse() async throws {
        try await StorekeeperHarness.run(worker: false, environment: Self.environment) { harness in
            try await harness.withHTTP { client in
                let id = "again\(Int.random(in: 1000...9999))"
                try await Self.seed(id, index: 1, flows: false, harness: harness, client: client)
                let first = try await Self.post(client, "/admin/accounts/\(id)/erase", Self.admin, #"{"confirm": "\#(id)"}"#)
                #expect(first.status == .ok)
                let pseudonym = try #require(try first.answer(ErasureAnswer.self).pseudonym)
                // The customer comes back: the same idempotency key, the same day's free credits, the same adjustment key.
                try await Self.seed(id, index: 1, flows: false, harness: harness, client: client)
                let second = try await Self.post(client, "/admin/accounts/\(id)/erase", Self.admin, #"{"confirm": "\#(id)"}"#)
                #expect(second.status == .ok, "\(String(buffer: second.body))")
                #expect(try second.answer(ErasureAnswer.self).pseudonym == pseudonym && second.answer(ErasureAnswer.self).alreadyErased == false)
                #expect(try await Self.export(id, client: client) == nil)
                #expect(try await harness.count("SELECT count(*) FROM erasures WHERE pseudonym = '\(pseudonym)'") == 2)
                let third = try await Self.post(client, "/admin/accounts/\(id)/erase", Self.admin, #"{"confirm": "\#(id)"}"#)
                #expect(
                    try third.status == .ok && third.answer(ErasureAnswer.self).alreadyErased == true
                        && third.answer(ErasureAnswer.self).pseudonym == nil,
                    "\(String(buffer: third.body))")

                let uuid = UUID()
                try await Self.seed(uuid.uuidString.lowercased(), index: 2, flows: false, harness: harness, client: client)
                let upper = try await Self.post(
                    client, "/admin/accounts/\(uuid.uuidString)/erase", Self.admin, #"{"confirm": "\#(uuid.uuidString)"}"#)
                #expect(upper.status == .ok, "\(String(buffer: upper.body))")
            }
        }
    }

    @Test("the app's role cannot use a forged erasure to rewrite the log and hide it: the erasure's record and the tombstone cannot be removed")
    func forgedErasure() async throws {
        try await StorekeeperHarness.run(worker: false, environment: Self.environment) { harness in
            try await harness.withHTTP { client in
                let id = "forged\(Int.random(in: 1000...9999))"
                try await Self.seed(id, index: 1, flows: false, harness: harness, client: client)
                await #expect(throws: (any Error).self) {
                    try await harness.client.withTransaction(logger: TestDatabase.logger) { connection in
                        try await connection.query(
                            "INSERT INTO erased_accounts VALUES ('forged', 'p2', now(), 'x')", logger: TestDatabase.logger)
                        try await connection.query(
                            "INSERT INTO erasures (pseudonym, erased_at, erased_by) VALUES ('p2', now(), 'x')", logger: TestDatabase.logger)
                        for try await _ in try await connection.query("SELECT erase_operator_actions(\(id), 'p2')", logger: TestDatabase.logger) {}
                        // Hiding it is what fails: neither the tombstone nor the erasure's record can be deleted.
                        try await connection.query("DELETE FROM erasures WHERE pseudonym = 'p2'", logger: TestDatabase.logger)
                    }
                }
                // A real erasure's rows: neither table gives them up.
                try await Self.seed(id + "-real", index: 2, flows: false, harness: harness, client: client)
                #expect(try await Self.post(client, "/admin/accounts/\(id)-real/erase", Self.admin, #"{"confirm": "\#(id)-real"}"#).status == .ok)
                for table in ["erasures", "erased_accounts"] {
                    for statement in ["DELETE FROM \(table)", "UPDATE \(table) SET erased_by = 'x'", "TRUNCATE \(table)"] {
                        await #expect(throws: (any Error).self, "\(statement)") {
                            for try await _ in try await harness.client.query(PostgresQuery(unsafeSQL: statement), logger: TestDatabase.logger) {}
                        }
                    }
                    #expect(try await harness.count("SELECT count(*) FROM \(table)") == 1)
                }
                #expect(try await harness.count("SELECT count(*) FROM operator_actions WHERE account_id = '\(id)'") == 2, "the log is as it was")
            }
        }
    }
}
