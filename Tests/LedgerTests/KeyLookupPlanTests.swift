import Foundation
import PostgresNIO
import Synchronization
import Testing

@testable import IntegrationSupport

/// The statements that find rows by their keys — the group reads and writes (sql/0053), a hold's read of its buckets
/// since (sql/0062), an apply's ledger read and the NOTIFY triggers (sql/0063) — keep finding them by key after their
/// plans were made on empty tables: a connection's generic plan of each is made at its first call, and one made while
/// the table was empty scanned the table's whole index at every later call as the table grew — on a new install, until
/// autovacuum had the plans made again. Blocks touched (`EXPLAIN (ANALYZE, BUFFERS)`, nested statements included)
/// after 20,000 rows arrived, on the connection that planned the statement first.
@Suite("Statements that find rows by key, planned on empty tables, on real PostgreSQL")
struct KeyLookupPlanTests {
    static let rows = 20_000

    @Test(
        "planned while usage_requests and credit_holds were empty, a spend group's first statement, a hold group's read by key and the hold write's ends still probe by key once they hold 20,000 rows"
    )
    func plansMadeOnEmptyTablesStillProbeByKey() async throws {
        try await TestDatabase.withMigratedClient(maximumConnections: 1) { client in
            try await client.withConnection { connection in
                // Analysed empty, as a new install's are; autovacuum kept from analysing them again in between, which
                // would have the plans made again and hide a bad one.
                try await Self.analyseEmpty(["usage_requests", "credit_holds"], on: connection)
                let statements = [
                    "SELECT * FROM lock_accounts_and_read_answers(ARRAY['lock:account-10001'], ARRAY['account-10001'], ARRAY['k'])",
                    """
                    SELECT * FROM lock_accounts_read_hold_group(ARRAY['account-10001'], ARRAY[]::uuid[], ARRAY['account-10001'], ARRAY['k'],
                        ARRAY[]::text[], now())
                    """,
                    """
                    SELECT * FROM write_hold_group(ARRAY[]::text[], ARRAY[]::text[], ARRAY[]::bigint[], ARRAY[]::text[], now(),
                        ARRAY[]::uuid[], ARRAY[]::text[], ARRAY[]::text[], ARRAY[]::text[], ARRAY[]::bigint[], ARRAY[]::text[],
                        ARRAY[]::timestamptz[], ARRAY[]::timestamptz[], ARRAY[]::text[], ARRAY[]::bigint[], ARRAY[]::bigint[],
                        ARRAY[]::bigint[], ARRAY[]::timestamptz[],
                        ARRAY['00000000-0000-0000-0000-000000010001']::uuid[], ARRAY['released'], ARRAY[NULL]::bigint[], ARRAY[1]::bigint[],
                        ARRAY[0]::bigint[], ARRAY[now()], ARRAY[]::text[])
                    """,
                ]
                // The first call of each plans it, on tables with no rows.
                for statement in statements { _ = try await LiveBucketsReadTests.blocksTouched(by: statement, on: connection) }
                try await connection.query(
                    """
                    INSERT INTO usage_requests (account_id, idempotency_key, meter, amount, outcome, answer)
                    SELECT 'account-' || g, 'k', 'ai_requests', 1, 'spent', '{}' FROM generate_series(2, \(Self.rows + 1)) AS g
                    """, logger: TestDatabase.logger)
                try await connection.query(
                    """
                    INSERT INTO credit_holds (id, account_id, idempotency_key, meter, amount, debits, created_at, expires_at)
                    SELECT ('00000000-0000-0000-0000-' || lpad(g::text, 12, '0'))::uuid, 'account-' || g, 'k', 'ai_requests', 1, '[]', now(),
                        now() + interval '1 hour'
                    FROM generate_series(2, \(Self.rows + 1)) AS g
                    """, logger: TestDatabase.logger)
                for statement in statements {
                    let blocks = try await LiveBucketsReadTests.blocksTouched(by: statement, on: connection)
                    // A probe by key touches a few index pages; the whole index of 20,000 rows is about a hundred, and the
                    // rows besides. The keys asked for are in the middle of the rows (account-10001, hold …10001), where
                    // no plan finds them by reading only an end of an index.
                    #expect(blocks > 0 && blocks < 30, "\(blocks) blocks: \(statement.prefix(60))")
                }
            }
        }
    }

    /// A hold's end and a spend given back read, per bucket a hold took from, the refunds, carries and claims posted
    /// since (sql/0059, sql/0060). Planned on an empty ledger, each `NOT EXISTS` and the carry's join by key were joined
    /// with a filter over a whole index: a settle of a hold on a refunded window read the ledger's every key (104,368
    /// blocks at 120,000 rows). Here every lookup finds a row: the bucket was refunded, carried to a top-up and
    /// claimed on after the hold took from it.
    @Test(
        "planned on an empty ledger, a hold's read of the refunds, carries and claims since it took from a bucket probes by key at 120,000 ledger rows"
    )
    func sinceHoldPlansMadeOnEmptyTablesStillProbeByKey() async throws {
        try await TestDatabase.withMigratedClient(maximumConnections: 1) { client in
            try await client.withConnection { connection in
                try await Self.analyseEmpty(["credit_ledger", "credit_buckets", "subscriptions", "credit_holds"], on: connection)
                let hold = "00000000-0000-0000-0000-000000010001"
                let statements = [
                    """
                    SELECT since_hold::text FROM lock_accounts_read_hold_group(ARRAY['account-10001'], ARRAY['\(hold)']::uuid[],
                        ARRAY[]::text[], ARRAY[]::text[], ARRAY[]::text[], now())
                    """,
                    "SELECT credit_buckets_since('hold:\(hold):0', ARRAY['cycle-10001'])::text",
                ]
                for statement in statements { _ = try await LiveBucketsReadTests.blocksTouched(by: statement, on: connection) }
                try await Self.storeHeldAndRefundedWindows(on: connection)
                for statement in statements {
                    let rows = try await connection.query(PostgresQuery(unsafeSQL: statement), logger: TestDatabase.logger).collect()
                    let answer = try #require(try rows.first?.decode(String.self))
                    let buckets = try #require(try JSONSerialization.jsonObject(with: Data(answer.utf8)) as? [[String: Any]])
                    #expect(buckets.count == 1)
                    // Each lookup found its row, so each ran: the refund's first row, the carry's top-up, its claim.
                    #expect(buckets.first?["refundedBy"] as? String == "refund:period-10001:1:cycle-10001")
                    #expect(buckets.first?["carriedTo"] as? String == "topup-10001")
                    #expect((buckets.first?["claims"] as? [[String: Any]])?.first?["key"] as? String == "claim:c10001")
                    let blocks = try await LiveBucketsReadTests.blocksTouched(by: statement, on: connection)
                    #expect(blocks > 0 && blocks < 60, "\(blocks) blocks: \(statement.prefix(60))")
                }
            }
        }
    }

    /// Every apply reads its subscription's and owner's buckets with their ledger rows (`credit_ledger_snapshot`), and
    /// every statement that inserts ledger rows or moves a window NOTIFYs their accounts (two triggers): planned while
    /// the tables were empty, the read walked the subscriptions' primary key and the ledger's whole bucket index (49,123
    /// blocks here) and the ledger's trigger read every bucket, 40,002 rows with the subscription (sql/0063).
    @Test("planned on empty tables, an apply's ledger read and the NOTIFY triggers probe by key at 20,000 subscriptions and notify the owner")
    func applyReadAndNotifyPlansMadeOnEmptyTablesStillProbeByKey() async throws {
        try await TestDatabase.withMigratedClient(maximumConnections: 2) { client in
            try await client.withConnection { connection in
                try await Self.analyseEmpty(["credit_ledger", "credit_buckets", "subscriptions"], on: connection)
                let snapshot = "SELECT * FROM credit_ledger_snapshot_with_owner_extent(NULL, 'otx-10001', 'account-10001', now())"
                // Each planned while its tables hold nothing or one row: the read, and the triggers at a first ledger row
                // and a first window moved.
                _ = try await LiveBucketsReadTests.blocksTouched(by: snapshot, on: connection)
                try await Self.run(
                    [
                        Self.subscription("1"),
                        """
                        INSERT INTO credit_buckets (key, meter, kind, original_transaction_id, billing_period, valid_from)
                        VALUES ('cycle-1', 'ai_requests', 'cycle', 'otx-1', 'period-1', now() - interval '1 day')
                        """,
                        "INSERT INTO credit_ledger (operation_key, bucket, delta, reason) VALUES ('grant:1', 'cycle-1', 10, 'test')",
                        "UPDATE credit_buckets SET valid_until = now() + interval '1 day' WHERE key = 'cycle-1'",
                    ], on: connection)
                try await Self.storeHeldAndRefundedWindows(on: connection)
                // The owner's second subscription: a live window with no rows yet, and one that has ended.
                try await Self.run(
                    [
                        Self.subscription("extra", account: "10001"),
                        """
                        INSERT INTO credit_buckets (key, meter, kind, original_transaction_id, billing_period, valid_from, valid_until)
                        VALUES ('cycle-extra', 'ai_requests', 'cycle', 'otx-extra', 'period-extra', now() - interval '1 day', NULL),
                            ('cycle-ended', 'ai_requests', 'cycle', 'otx-extra', 'period-ended', now() - interval '2 days', now() - interval '1 day')
                        """,
                    ], on: connection)

                // The subscription's window, the owner's other live window (no rows: once, with none) and its top-up, each
                // with its rows in the order they were posted, as the ledger has them; not the ended window.
                func entries(_ sql: String) async throws -> [String] {
                    try await connection.query(PostgresQuery(unsafeSQL: sql), logger: TestDatabase.logger).collect().map { row in
                        let (bucket, key) = try row.decode((String?, String?).self, context: .default)
                        return "\(bucket ?? "-") \(key ?? "-")"
                    }
                }
                let read = try await entries(
                    "SELECT bucket_key, entry_operation_key FROM credit_ledger_snapshot_with_owner_extent(NULL, 'otx-10001', 'account-10001', now())")
                let posted = try await entries(
                    "SELECT bucket, operation_key FROM credit_ledger WHERE bucket IN ('cycle-10001', 'topup-10001') ORDER BY bucket, id")
                #expect(posted.count == 6)
                #expect(read == posted.filter { $0.hasPrefix("cycle-") } + ["cycle-extra -"] + posted.filter { $0.hasPrefix("topup-") }, "\(read)")
                let blocks = try await LiveBucketsReadTests.blocksTouched(by: snapshot, on: connection)
                #expect(blocks > 0 && blocks < 60, "the snapshot touched \(blocks) blocks")

                let ledgerRow = "INSERT INTO credit_ledger (operation_key, bucket, delta, reason) VALUES ('spend:10001', 'cycle-10001', -1, 'test')"
                let windowMoved = "UPDATE credit_buckets SET valid_from = valid_from WHERE key = 'topup-20001'"
                for statement in [ledgerRow, windowMoved] {
                    let tuples = try await Self.bucketsAndSubscriptionsRead(by: statement, on: connection)
                    #expect(tuples > 0 && tuples < 10, "\(tuples) rows of buckets and subscriptions read: \(statement.prefix(40))")
                }
                // Whom they NOTIFY, committed: the window's owner through its subscription, the top-up's own account.
                let heard = Heard()
                try await withThrowingTaskGroup(of: Void.self) { group in
                    group.addTask {
                        try await client.withConnection { listener in
                            try await listener.listen(on: "storekeeper_account_changed") { notifications in
                                for try await notification in notifications { heard.append(notification.payload) }
                            }
                        }
                    }
                    defer { group.cancelAll() }
                    try await eventually("the listener to hear a NOTIFY") {
                        try await connection.query("SELECT pg_notify('storekeeper_account_changed', 'probe')", logger: TestDatabase.logger)
                        return heard.take().contains("probe")
                    }
                    try await Self.run([ledgerRow], on: connection)
                    // Probes sent before the first was heard may still come.
                    try await eventually("the ledger row's NOTIFY") { heard.values.filter { $0 != "probe" } == ["account-10001"] }
                    _ = heard.take()
                    try await Self.run([windowMoved], on: connection)
                    try await eventually("the moved window's NOTIFY") { heard.values.filter { $0 != "probe" } == ["account-20001"] }
                }
            }
        }
    }

    /// Keeps autovacuum off `tables` and analyses them as they are, empty: the plans made next are made on that, and
    /// nothing has them made again while the test fills the tables.
    static func analyseEmpty(_ tables: [String], on connection: PostgresConnection) async throws {
        for table in tables {
            try await connection.query(PostgresQuery(unsafeSQL: "ALTER TABLE \(table) SET (autovacuum_enabled = off)"), logger: TestDatabase.logger)
        }
        try await connection.query(PostgresQuery(unsafeSQL: "ANALYZE " + tables.joined(separator: ", ")), logger: TestDatabase.logger)
    }

    /// The NOTIFY payloads heard so far.
    final class Heard: Sendable {
        private let payloads = Mutex<[String]>([])
        var values: [String] { payloads.withLock { $0 } }
        func append(_ payload: String) { payloads.withLock { $0.append(payload) } }
        /// The payloads heard so far, forgotten.
        func take() -> [String] {
            payloads.withLock { payloads in
                defer { payloads = [] }
                return payloads
            }
        }
    }

    /// Rows of `credit_buckets` and `subscriptions` that `statement` read, from the transaction's own table statistics
    /// around it; the statement is rolled back.
    static func bucketsAndSubscriptionsRead(by statement: String, on connection: PostgresConnection) async throws -> Int64 {
        let read = """
            SELECT coalesce(sum(seq_tup_read + coalesce(idx_tup_fetch, 0)), 0)::bigint FROM pg_stat_xact_user_tables
            WHERE relname IN ('credit_buckets', 'subscriptions')
            """
        try await connection.query("BEGIN", logger: TestDatabase.logger)
        let before = try await connection.query(PostgresQuery(unsafeSQL: read), logger: TestDatabase.logger).collect()
        try await connection.query(PostgresQuery(unsafeSQL: statement), logger: TestDatabase.logger)
        let after = try await connection.query(PostgresQuery(unsafeSQL: read), logger: TestDatabase.logger).collect()
        try await connection.query("ROLLBACK", logger: TestDatabase.logger)
        return try (after.first?.decode(Int64.self) ?? 0) - (before.first?.decode(Int64.self) ?? 0)
    }

    static func run(_ statements: [String], on connection: PostgresConnection) async throws {
        for statement in statements { try await connection.query(PostgresQuery(unsafeSQL: statement), logger: TestDatabase.logger) }
    }

    /// An active App Store subscription `otx-<id>` of `account-<account>` in its period `period-<id>`.
    static func subscription(_ id: String, account: String? = nil) -> String {
        """
        INSERT INTO subscriptions (original_transaction_id, account_id, product_id, environment, status, will_renew, is_trial, ownership,
            latest_transaction_id, last_event_type, last_signed_date, billing_period, store)
        VALUES ('otx-\(id)', 'account-\(account ?? id)', 'pro.monthly', 'Sandbox', 'active', true, false, 'PURCHASED', 'otx-\(id)',
            'SUBSCRIBED', 0, 'period-\(id)', 'app_store')
        """
    }

    /// 20,000 App Store subscriptions (`otx-N` of `account-N`), each with a cycle window `cycle-N` and a top-up
    /// `topup-N`; a hold `…0000N` of 5 from the window, and after it a refund of the window, a carry of its credits to
    /// the top-up, and a claim on the top-up: 120,000 ledger rows.
    static func storeHeldAndRefundedWindows(on connection: PostgresConnection) async throws {
        let accounts = "generate_series(2, \(Self.rows + 1)) AS g"
        try await connection.query(
            """
            INSERT INTO subscriptions (original_transaction_id, account_id, product_id, environment, status, will_renew, is_trial,
                ownership, latest_transaction_id, last_event_type, last_signed_date, billing_period, revoked_at, store)
            SELECT 'otx-' || g, 'account-' || g, 'pro.monthly', 'Sandbox', 'active', true, false, 'PURCHASED', 'otx-' || g,
                'SUBSCRIBED', 0, 'period-' || g, NULL, 'app_store'
            FROM \(unescaped: accounts)
            """, logger: TestDatabase.logger)
        try await connection.query(
            """
            INSERT INTO credit_buckets (key, meter, kind, original_transaction_id, billing_period, account_id, valid_from, valid_until)
            SELECT b.* FROM \(unescaped: accounts) CROSS JOIN LATERAL (VALUES
                ('cycle-' || g, 'ai_requests', 'cycle', 'otx-' || g, 'period-' || g, NULL, now() - interval '1 day', now() + interval '1 day'),
                ('topup-' || g, 'ai_requests', 'topup', NULL, NULL, 'account-' || g, now() - interval '1 day', NULL)
            ) AS b
            """, logger: TestDatabase.logger)
        try await connection.query(
            """
            INSERT INTO credit_holds (id, account_id, idempotency_key, meter, amount, debits, created_at, expires_at)
            SELECT ('00000000-0000-0000-0000-' || lpad(g::text, 12, '0'))::uuid, 'account-' || g, 'k', 'ai_requests', 5,
                jsonb_build_array(jsonb_build_object('bucket', 'cycle-' || g, 'amount', 5)), now(), now() + interval '1 hour'
            FROM \(unescaped: accounts)
            """, logger: TestDatabase.logger)
        for rows in [
            "('grant:' || g, 'cycle-' || g, 10), ('hold:00000000-0000-0000-0000-' || lpad(g::text, 12, '0') || ':0', 'cycle-' || g, -5)",
            """
            ('refund:period-' || g || ':1:cycle-' || g, 'cycle-' || g, -2), ('carry:c' || g || ':out', 'cycle-' || g, -1),
            ('carry:c' || g || ':in', 'topup-' || g, 1), ('claim:c' || g, 'topup-' || g, 1)
            """,
        ] {
            try await connection.query(
                """
                INSERT INTO credit_ledger (operation_key, bucket, delta, reason)
                SELECT r.* , 'test' FROM \(unescaped: accounts) CROSS JOIN LATERAL (VALUES \(unescaped: rows)) AS r ORDER BY g
                """, logger: TestDatabase.logger)
        }
    }
}
