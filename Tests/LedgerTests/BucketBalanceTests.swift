import Credits
import Foundation
import Persistence
import PostgresNIO
import StorekeeperRuntime
import Subscriptions
import Testing

@testable import IntegrationSupport

/// A bucket's balance is kept beside the ledger (sql/0041) by the ledger's own triggers, and read by key. Every test
/// through ``StorekeeperHarness`` checks afterwards that each kept balance is its rows' sum; these pin the triggers'
/// arithmetic with figures worked by hand, show that the harness's check can fail, and fill an existing ledger.
@Suite("Kept bucket balances, on real PostgreSQL")
struct BucketBalanceTests {
    @Test("rows posted, skipped as posted already, moved to another bucket, re-keyed, deleted and truncated: each bucket's balance follows")
    func triggersFollowEveryChange() async throws {
        try await TestDatabase.withMigratedClient(maximumConnections: 1) { client in
            try await client.withConnection { connection in
                func run(_ sql: String) async throws { try await connection.query(PostgresQuery(unsafeSQL: sql), logger: TestDatabase.logger) }
                func balances() async throws -> [String: Int64] {
                    var kept: [String: Int64] = [:]
                    for try await (bucket, balance) in try await connection.query(
                        "SELECT bucket, balance FROM credit_bucket_balances", logger: TestDatabase.logger
                    ).decode((String, Int64).self) { kept[bucket] = balance }
                    return kept
                }
                try await run(
                    """
                    INSERT INTO credit_buckets (key, meter, kind, account_id, valid_from) VALUES
                        ('topup:a:m', 'm', 'topup', 'a', now()), ('topup:b:m', 'm', 'topup', 'b', now()), ('topup:c:m', 'm', 'topup', 'c', now())
                    """)
                #expect(try await balances().isEmpty, "a bucket without rows has no balance row: it reads as 0")

                let insert = "INSERT INTO credit_ledger (operation_key, bucket, delta, reason) VALUES"
                try await run("\(insert) ('k1', 'topup:a:m', 10, 'x'), ('k2', 'topup:a:m', -3, 'x'), ('k3', 'topup:b:m', 5, 'x')")
                #expect(try await balances() == ["topup:a:m": 7, "topup:b:m": 5])

                // A key posted already is skipped: its delta is not counted twice.
                try await run("\(insert) ('k1', 'topup:a:m', 10, 'x'), ('k4', 'topup:a:m', 1, 'x') ON CONFLICT (operation_key) DO NOTHING")
                #expect(try await balances() == ["topup:a:m": 8, "topup:b:m": 5])

                // As an erasure moves rows to the pseudonym's bucket; then a change of keys only.
                try await run("UPDATE credit_ledger SET bucket = 'topup:c:m' WHERE operation_key IN ('k2', 'k3')")
                #expect(try await balances() == ["topup:a:m": 11, "topup:b:m": 0, "topup:c:m": 2])
                try await run("UPDATE credit_ledger SET operation_key = operation_key || ':renamed'")
                #expect(try await balances() == ["topup:a:m": 11, "topup:b:m": 0, "topup:c:m": 2])

                try await run("DELETE FROM credit_ledger WHERE operation_key = 'k1:renamed'")
                #expect(try await balances() == ["topup:a:m": 1, "topup:b:m": 0, "topup:c:m": 2])

                // A bucket deleted takes its balance with it (an erasure deletes the account's old buckets).
                try await run("DELETE FROM credit_buckets WHERE key = 'topup:b:m'")
                #expect(try await balances() == ["topup:a:m": 1, "topup:c:m": 2])

                try await run("TRUNCATE credit_ledger")
                #expect(try await balances().isEmpty)
            }
        }
    }

    @Test("the harness's check finds a balance the triggers did not keep")
    func checkCanFail() async throws {
        try await StorekeeperHarness.run(worker: false) { harness in
            try await harness.client.withConnection { connection in
                func run(_ sql: String) async throws { try await connection.query(PostgresQuery(unsafeSQL: sql), logger: TestDatabase.logger) }
                try await run("INSERT INTO credit_buckets (key, meter, kind, account_id, valid_from) VALUES ('topup:a:m', 'm', 'topup', 'a', now())")
                try await run("ALTER TABLE credit_ledger DISABLE TRIGGER credit_ledger_balances_posted")
                try await run("INSERT INTO credit_ledger (operation_key, bucket, delta, reason) VALUES ('k1', 'topup:a:m', 4, 'x')")
                #expect(try await harness.balanceMismatches() == 1)
                // Left as the triggers would have it, for the harness's own check after the test.
                try await run("ALTER TABLE credit_ledger ENABLE TRIGGER credit_ledger_balances_posted")
                try await run("INSERT INTO credit_bucket_balances (bucket, balance) VALUES ('topup:a:m', 4)")
                #expect(try await harness.balanceMismatches() == 0)
            }
        }
    }

    @Test("0041 fills the balances of a ledger written before it, and the live-bucket read returns them")
    func migrationFillsExistingLedger() async throws {
        let all = SchemaMigrator.defaultDirectory()
        let before = FileManager.default.temporaryDirectory.appendingPathComponent("sk-sql-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: before, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: before) }
        for name in try FileManager.default.contentsOfDirectory(atPath: all.path) where name < "0041" {
            try FileManager.default.copyItem(at: all.appendingPathComponent(name), to: before.appendingPathComponent(name))
        }
        try await TestDatabase.withFreshDatabase { url in
            try await PostgresClient.withRunning(url.clientConfiguration(), logger: TestDatabase.logger) { client in
                try await SchemaMigrator(client: client, directory: before, logger: TestDatabase.logger).migrate()
                try await client.withConnection { connection in
                    try await LiveBucketsReadTests.store(accounts: 1...50, on: connection)
                    // Ten spends of account-7's cycle credits.
                    try await connection.query(
                        """
                        INSERT INTO credit_ledger (operation_key, bucket, delta, reason)
                        SELECT 'spend:7:' || g, 'cycle:s-7:m0', -1, 'usage' FROM generate_series(1, 10) AS g
                        """, logger: TestDatabase.logger)
                }
                let applied = try await SchemaMigrator(client: client, directory: all, logger: TestDatabase.logger).migrate()
                #expect(applied.contains { $0.hasPrefix("0041") })
                #expect(try await TestDatabase.count(client, "SELECT count(*) FROM credit_bucket_balances") == 100)
                // Granted 1 + 2 + … + 50 to the windows and 5 to each top-up, 10 spent.
                #expect(try await TestDatabase.count(client, "SELECT sum(balance)::int FROM credit_bucket_balances") == 1275 + 250 - 10)

                let ledger = CreditLedger(catalogue: try TierCatalogue.load(path: "config/tiers.yml").get(), logger: TestDatabase.logger)
                let account = try #require(AccountID("account-7"))
                let live = try await client.withConnection { try await ledger.liveBuckets(of: [account], at: Date(), on: $0) }
                #expect(live[account]?.map(\.balance) == [-3, 5], "7 granted less 10 spent, and the top-up's 5")
            }
        }
    }

    @Test("a bucket's balance is read by key: the live-bucket read touches as few blocks at 1,000 rows a bucket as at one")
    func balanceReadDoesNotGrowWithRows() async throws {
        try await TestDatabase.withMigratedClient(maximumConnections: 1) { client in
            try await client.withConnection { connection in
                try await LiveBucketsReadTests.store(accounts: 1...100, on: connection)
                // The second of two calls: the first may plan (and read the catalog), as after an autoanalyze.
                func blocks() async throws -> Int {
                    _ = try await read()
                    return try await read()
                }
                func read() async throws -> Int {
                    let plan = try await connection.query(
                        "EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) SELECT * FROM live_credit_buckets(ARRAY['account-7'], now(), false)",
                        logger: TestDatabase.logger)
                    for try await text in plan.decode(String.self) {
                        // Raw: PostgreSQL's EXPLAIN (FORMAT JSON) output, not a Storekeeper answer.
                        let plans = try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [[String: Any]]
                        let top = try #require(plans?.first?["Plan"] as? [String: Any])
                        return (top["Shared Hit Blocks"] as? Int ?? 0) + (top["Shared Read Blocks"] as? Int ?? 0)
                    }
                    return -1
                }
                let few = try await blocks()
                // 1,000 rows in each of account-7's buckets, spread over the ledger's pages among other accounts' rows.
                try await connection.query(
                    """
                    INSERT INTO credit_ledger (operation_key, bucket, delta, reason)
                    SELECT 'row:' || g || ':' || a, CASE WHEN g % 2 = 0 THEN 'cycle:s-' || a || ':m0' ELSE 'topup:account-' || a END, 1, 'x'
                    FROM generate_series(1, 2000) AS g, generate_series(1, 100) AS a ORDER BY g, a
                    """, logger: TestDatabase.logger)
                let many = try await blocks()
                #expect(many <= few + 4, "\(few) blocks at one row a bucket, \(many) at 1,000")
            }
        }
    }
}
