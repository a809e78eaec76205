import Crypto
import Foundation
import PostgresNIO
import StorekeeperRuntime
import Testing

@testable import IntegrationSupport
@testable import Persistence

@Suite("Migrations")
struct MigrationTests {
    @Test("applied once each, safe when several processes migrate at once, idempotent afterwards")
    func concurrentAndIdempotent() async throws {
        try await TestDatabase.withFreshDatabase { url in
            let results = try await withThrowingTaskGroup(of: [String].self) { group in
                for _ in 0..<4 {
                    group.addTask {
                        try await PostgresClient.withRunning(url.clientConfiguration(maximumConnections: 1), logger: TestDatabase.logger) {
                            client in
                            try await SchemaMigrator(client: client, directory: SchemaMigrator.defaultDirectory(), logger: TestDatabase.logger)
                                .migrate()
                        }
                    }
                }
                return try await group.reduce(into: [[String]]()) { $0.append($1) }
            }
            #expect(results.filter { !$0.isEmpty }.count == 1)
            try await PostgresClient.withRunning(url.clientConfiguration(), logger: TestDatabase.logger) { client in
                let migrator = try SchemaMigrator(client: client, directory: SchemaMigrator.defaultDirectory(), logger: TestDatabase.logger)
                #expect(try await migrator.migrate().isEmpty)
                #expect(try await migrator.pendingMigrations().isEmpty)
            }
        }
    }

    @Test("every file applies as a role that owns its database and is no superuser, as docs/operations.md sets production up")
    func ownerNotSuperuser() async throws {
        let admin = try TestDatabase.adminURL()
        let role = "sk_owner_" + UUID().uuidString.replacingOccurrences(of: "-", with: "").prefix(12).lowercased()
        func asAdmin(_ sql: String) async throws {
            _ = try await PostgresClient.withRunning(admin.clientConfiguration(maximumConnections: 1), logger: TestDatabase.logger) {
                try await $0.query(PostgresQuery(unsafeSQL: sql), logger: TestDatabase.logger)
            }
        }
        // The test cluster trusts local connections: the role needs no password.
        try await asAdmin("CREATE ROLE \(role) LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE")
        do {
            try await TestDatabase.withFreshDatabase { url in
                try await asAdmin("ALTER DATABASE \(url.database) OWNER TO \(role)")
                var owner = url
                owner.username = role
                try await PostgresClient.withRunning(owner.clientConfiguration(), logger: TestDatabase.logger) { client in
                    let migrator = try SchemaMigrator(client: client, directory: SchemaMigrator.defaultDirectory(), logger: TestDatabase.logger)
                    try await migrator.migrate()
                    #expect(try await migrator.pendingMigrations().isEmpty)
                }
            }
        } catch {
            try? await asAdmin("DROP ROLE IF EXISTS \(role)")
            throw error
        }
        try await asAdmin("DROP ROLE \(role)")
    }

    @Test(
        "a database a newer version migrated: nothing to do when every migration of this release is applied (its serve unit migrates first on every restart); refused when one of its own is still pending; readiness counts only the migrations it knows"
    )
    func newerDatabase() async throws {
        try await TestDatabase.withFreshDatabase { url in
            try await PostgresClient.withRunning(url.clientConfiguration(), logger: TestDatabase.logger) { client in
                let migrator = try SchemaMigrator(client: client, directory: SchemaMigrator.defaultDirectory(), logger: TestDatabase.logger)
                try await migrator.migrate()
                try await client.query(
                    "INSERT INTO storekeeper_migrations (version, name, checksum) VALUES (9999, '9999_future.sql', 'x')",
                    logger: TestDatabase.logger)
                #expect(try await migrator.migrate().isEmpty)
                // Readiness of a release still serving while the next one's migrations are applied: nothing pending.
                #expect(try await migrator.pendingMigrations(newerAllowed: true).isEmpty)
                // One of this release's own files not applied, behind the newer one: refused, nothing applied.
                let last = try #require(try FileManager.default.contentsOfDirectory(atPath: SchemaMigrator.defaultDirectory().path).sorted().last)
                let version = try #require(Int(last.prefix { $0.isNumber }))
                try await client.query("DELETE FROM storekeeper_migrations WHERE version = \(version)", logger: TestDatabase.logger)
                let error = await #expect(throws: PersistenceError.self) { try await migrator.migrate() }
                #expect(error?.code == .databaseNewerThanCode)
                #expect(try await migrator.pendingMigrations(newerAllowed: true) == [last])
            }
        }
    }

    @Test(
        "0070 reduces the Stripe events stored before it that hold nothing of Storekeeper's — acknowledged, not Storekeeper's, not found, the other livemode's — to their envelope, after the migration and in batches; events processed into objects, or not processed yet, keep their body; what a process of the release before stores or marks later is reduced on write"
    )
    func stripeEventEnvelopeBackfill() async throws {
        let all = SchemaMigrator.defaultDirectory()
        let before = try Self.directory(of: all, before: "0070")
        defer { try? FileManager.default.removeItem(at: before) }
        try await TestDatabase.withFreshDatabase { url in
            try await PostgresClient.withRunning(url.clientConfiguration(), logger: TestDatabase.logger) { client in
                try await SchemaMigrator(client: client, directory: before, logger: TestDatabase.logger).migrate()
                // As the release before stored them: the body as received, whatever the outcome.
                let events: [(id: String, outcome: String?, ignored: Bool, reduced: Bool)] = [
                    ("evt_1_acknowledged", "acknowledged", false, true), ("evt_2_applied", "applied", false, false),
                    ("evt_3_not_found", "not_found", false, true), ("evt_4_unprocessed", nil, false, false),
                    ("evt_5_other_livemode", nil, true, true), ("evt_6_no_subscription", "no_subscription", false, true),
                    ("evt_7_waiting", "waiting_for_account", false, false),
                ]
                func store() async throws {
                    for event in events {
                        let body =
                            #"{"id":"\#(event.id)","object":"event","type":"customer.updated","livemode":false,"created":1790000000,"data":{"object":{"id":"cus_1","object":"customer","email":"alice@example.com","name":"Alice"}}}"#
                        try await client.query(
                            """
                            INSERT INTO stripe_events (id, type, livemode, object_id, object_type, created_at, signed_at, ignored, body, outcome)
                            VALUES (\(event.id), 'customer.updated', false, 'cus_1', 'customer', to_timestamp(1790000000), now(), \(event.ignored),
                                convert_to(\(body), 'UTF8'), \(event.outcome))
                            ON CONFLICT (id) DO UPDATE SET body = EXCLUDED.body
                            """, logger: TestDatabase.logger)
                    }
                }
                func reduced() async throws -> [String] {
                    var ids: [String] = []
                    for try await (id, body) in try await client.query(
                        "SELECT id, convert_from(body, 'UTF8') FROM stripe_events ORDER BY id", logger: TestDatabase.logger
                    ).decode((String, String).self) {
                        let json = try #require(try JSONSerialization.jsonObject(with: Data(body.utf8)) as? [String: Any])
                        if body.contains("alice@example.com") { continue }
                        // What the columns say, and nothing else.
                        #expect(Set(json.keys) == ["id", "object", "type", "livemode", "created", "data", "storekeeper_envelope_only"], "\(body)")
                        #expect(
                            json["id"] as? String == id && json["type"] as? String == "customer.updated" && json["created"] as? Int == 1_790_000_000)
                        #expect(body.contains(#""object": {"id": "cus_1", "object": "customer"}"#), "\(body)")
                        ids.append(id)
                    }
                    return ids
                }
                let expected = events.filter(\.reduced).map(\.id)
                try await store()
                try await SchemaMigrator(client: client, directory: all, logger: TestDatabase.logger).migrate()
                #expect(try await reduced() == expected)
                #expect(
                    try await TestDatabase.count(client, "SELECT count(*) FROM storekeeper_backfills WHERE name = '0070_stripe_event_envelopes'") == 1
                )
                // A process of the release before, still running during the upgrade, stores and marks events as it
                // did: the table's trigger reduces what it writes, also after the backfill is recorded done.
                try await client.query("DELETE FROM stripe_events", logger: TestDatabase.logger)
                try await store()
                #expect(try await reduced() == events.filter { $0.ignored || ($0.reduced && $0.outcome != nil) }.map(\.id))
                try await client.query(
                    "UPDATE stripe_events SET outcome = 'not_found', processed_at = now() WHERE id = 'evt_4_unprocessed'", logger: TestDatabase.logger
                )
                #expect(try await reduced() == (expected + ["evt_4_unprocessed"]).sorted())
                #expect(try await SchemaMigrator(client: client, directory: all, logger: TestDatabase.logger).migrate() == [])
                // Rows stored before the file (the trigger off, as it was not there), in batches of two: all found, once.
                try await client.query("ALTER TABLE stripe_events DISABLE TRIGGER stripe_events_keep_envelope", logger: TestDatabase.logger)
                try await client.query("DELETE FROM stripe_events", logger: TestDatabase.logger)
                try await store()
                try await client.query("ALTER TABLE stripe_events ENABLE TRIGGER stripe_events_keep_envelope", logger: TestDatabase.logger)
                #expect(try await reduced() == [])
                try await client.query("DELETE FROM storekeeper_backfills WHERE name = '0070_stripe_event_envelopes'", logger: TestDatabase.logger)
                var backfill = KeyRangeBackfill.stripeEventEnvelopes(client: client, logger: TestDatabase.logger)
                backfill.batch = 2
                #expect(try await backfill.run() == expected.count)
                #expect(try await reduced() == expected)
                #expect(try await backfill.run() == 0)
            }
        }
    }

    @Test(
        "0033 names the store of rows written before it without a lock held for them: an App Store id, a Stripe sub_ id (and a digit id that only looks odd) are filled in by the backfill after the migration, once; a row of the previous version's writer gets its store on insert"
    )
    func subscriptionStoreBackfill() async throws {
        let all = SchemaMigrator.defaultDirectory()
        let before = try Self.directory(of: all, before: "0033")
        defer { try? FileManager.default.removeItem(at: before) }
        try await TestDatabase.withFreshDatabase { url in
            try await PostgresClient.withRunning(url.clientConfiguration(), logger: TestDatabase.logger) { client in
                try await SchemaMigrator(client: client, directory: before, logger: TestDatabase.logger).migrate()
                func insert(_ id: String) async throws {
                    try await client.query(
                        """
                        INSERT INTO subscriptions (original_transaction_id, account_id, product_id, environment, status, will_renew,
                            is_trial, ownership, latest_transaction_id, last_event_type, last_signed_date, last_event_id, billing_period)
                        VALUES (\(id), 'acct', 'pro.monthly', 'Sandbox', 'active', true, false, 'PURCHASED', \(id), 'SUBSCRIBED', 1, 'x', \(id))
                        """, logger: TestDatabase.logger)
                }
                for id in ["2000000000000001", "sub_1Abc", "sub1000"] { try await insert(id) }
                try await SchemaMigrator(client: client, directory: all, logger: TestDatabase.logger).migrate()
                var stores: [String] = []
                for try await row in try await client.query(
                    "SELECT original_transaction_id || '=' || store FROM subscriptions ORDER BY 1", logger: TestDatabase.logger
                ).decode(String.self) { stores.append(row) }
                #expect(stores == ["2000000000000001=app_store", "sub1000=app_store", "sub_1Abc=stripe"])
                #expect(
                    try await TestDatabase.count(client, "SELECT count(*) FROM storekeeper_backfills WHERE name = '0033_subscription_store'") == 1)
                // The previous version's writer names no store: its row is filed by the rule it was written under.
                try await insert("sub_2Def")
                #expect(
                    try await TestDatabase.count(
                        client, "SELECT count(*) FROM subscriptions WHERE original_transaction_id = 'sub_2Def' AND store = 'stripe'")
                        == 1)
                #expect(try await SchemaMigrator(client: client, directory: all, logger: TestDatabase.logger).migrate() == [])
            }
        }
    }

    @Test(
        "0072 hashes the adjustment keys of accounts erased before it in the audit log, as the ledger keeps them, and records the rewrite in erasures; other accounts' entries, other actions' targets and a key that was the id (now the pseudonym) stay as they were"
    )
    func erasedAdjustmentKeys() async throws {
        let all = SchemaMigrator.defaultDirectory()
        let before = try Self.directory(of: all, before: "0072")
        defer { try? FileManager.default.removeItem(at: before) }
        try await TestDatabase.withFreshDatabase { url in
            try await PostgresClient.withRunning(url.clientConfiguration(), logger: TestDatabase.logger) { client in
                try await SchemaMigrator(client: client, directory: before, logger: TestDatabase.logger).migrate()
                try await client.query(
                    "INSERT INTO erased_accounts (account_digest, pseudonym, erased_at, erased_by) VALUES ('digest-1', 'pseudonym-1', now(), 'ada')",
                    logger: TestDatabase.logger)
                for (account, action, target) in [
                    ("pseudonym-1", "credits.adjust", "adj-alice-smith"), ("pseudonym-1", "grant.create", "grant-1"),
                    ("bob", "credits.adjust", "adj-bob"),
                    // Ids that are the erased pseudonym's neighbours (a prefix's extension, another case): not erased.
                    ("pseudonym-10", "credits.adjust", "adj-ten"), ("PSEUDONYM-1", "credits.adjust", "adj-upper"),
                    // A key that was the id itself: sql/0031 wrote the pseudonym there, and the id is not known to hash.
                    ("pseudonym-1", "credits.adjust", "pseudonym-1"),
                ] {
                    try await client.query(
                        """
                        INSERT INTO operator_actions (at, operator, role, action, request, status, account_id, target)
                        VALUES (now(), 'ada', 'admin', \(action), 'POST /admin/accounts/{id}/credits', 201, \(account), \(target))
                        """, logger: TestDatabase.logger)
                }
                try await SchemaMigrator(client: client, directory: all, logger: TestDatabase.logger).migrate()
                var targets: [String] = []
                for try await row in try await client.query(
                    "SELECT account_id || ' ' || action || ' ' || target FROM operator_actions ORDER BY id", logger: TestDatabase.logger
                ).decode(String.self) { targets.append(row) }
                let hashed = Insecure.MD5.hash(data: Data("adj-alice-smith".utf8)).map { String(format: "%02x", $0) }.joined()
                #expect(
                    targets == [
                        "pseudonym-1 credits.adjust \(hashed)", "pseudonym-1 grant.create grant-1", "bob credits.adjust adj-bob",
                        "pseudonym-10 credits.adjust adj-ten", "PSEUDONYM-1 credits.adjust adj-upper",
                        "pseudonym-1 credits.adjust pseudonym-1",
                    ])
                #expect(
                    try await TestDatabase.count(
                        client, "SELECT count(*) FROM erasures WHERE pseudonym = 'pseudonym-1' AND erased_by LIKE 'sql/0072%'") == 1,
                    "the rewrite leaves its record")
                await #expect(throws: (any Error).self, "the log is append-only again") {
                    try await client.query("UPDATE operator_actions SET target = 'x'", logger: TestDatabase.logger)
                }
            }
        }
    }

    @Test("0007 and 0008 upgrade rows written before them: UUID accounts become their lowercased text, billing periods and usage outcomes are filled")
    func upgradesExistingRows() async throws {
        let all = SchemaMigrator.defaultDirectory()
        let before = try Self.directory(of: all, before: "0007")
        defer { try? FileManager.default.removeItem(at: before) }
        try await TestDatabase.withFreshDatabase { url in
            try await PostgresClient.withRunning(url.clientConfiguration(), logger: TestDatabase.logger) { client in
                try await SchemaMigrator(client: client, directory: before, logger: TestDatabase.logger).migrate()
                try await client.query(
                    """
                    INSERT INTO subscriptions (original_transaction_id, account_id, product_id, environment, status, will_renew,
                        is_trial, ownership, latest_transaction_id, last_event_type, last_signed_date, last_event_id)
                    VALUES ('1000', '6F1D4D5E-8A1A-4B53-9C1E-1B2F3A4B5C6D', 'pro.monthly', 'Sandbox', 'active', true, false,
                        'PURCHASED', '1000', 'SUBSCRIBED', 1, 'x')
                    """,
                    logger: TestDatabase.logger)
                try await client.query(
                    """
                    INSERT INTO usage_requests (account_id, idempotency_key, meter, amount, http_status, answer)
                    VALUES ('6f1d4d5e-8a1a-4b53-9c1e-1b2f3a4b5c6d', 'k1', 'ai', 5, 402, '{"httpStatus":402,"meter":"ai","remaining":0}')
                    """,
                    logger: TestDatabase.logger)
                let applied = try await SchemaMigrator(client: client, directory: all, logger: TestDatabase.logger).migrate()
                #expect(applied.contains { $0.hasPrefix("0007") } && applied.contains { $0.hasPrefix("0008") })
                let subscription = try await client.query(
                    "SELECT account_id, billing_period FROM subscriptions", logger: TestDatabase.logger)
                for try await (account, period) in subscription.decode((String, String).self) {
                    #expect(account == "6f1d4d5e-8a1a-4b53-9c1e-1b2f3a4b5c6d")
                    #expect(period == "1000")
                }
                let usage = try await client.query("SELECT outcome FROM usage_requests", logger: TestDatabase.logger)
                for try await outcome in usage.decode(String.self) { #expect(outcome == "insufficient_credits") }
            }
        }
    }

    /// A directory holding the files of `all` before `file`: a database at the schema of the release before it.
    static func directory(of all: URL, before file: String) throws -> URL {
        let before = FileManager.default.temporaryDirectory.appendingPathComponent("sk-sql-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: before, withIntermediateDirectories: true)
        for name in try FileManager.default.contentsOfDirectory(atPath: all.path) where name < file {
            try FileManager.default.copyItem(at: all.appendingPathComponent(name), to: before.appendingPathComponent(name))
        }
        return before
    }
}
