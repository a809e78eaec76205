import Foundation
import PostgresNIO
import StorekeeperRuntime
import Testing

@testable import IntegrationSupport
@testable import Persistence

/// A backfill stopped part way (an interrupted `storekeeper migrate`) resumes after its last committed batch (sql/0071).
@Suite("Backfill progress")
struct BackfillProgressTests {
    @Test(
        "a backfill that fails in its fourth batch keeps the third's last key; the next run changes only the rows after it, each row once in all, then records the backfill done and forgets the key"
    )
    func resumesAfterTheLastBatch() async throws {
        try await TestDatabase.withFreshDatabase { url in
            try await PostgresClient.withRunning(url.clientConfiguration(), logger: TestDatabase.logger) { client in
                try await SchemaMigrator(client: client, directory: SchemaMigrator.defaultDirectory(), logger: TestDatabase.logger).migrate()
                try await client.query(
                    "CREATE TABLE backfill_probe (id text PRIMARY KEY, changes int NOT NULL DEFAULT 0)", logger: TestDatabase.logger)
                try await client.query(
                    "INSERT INTO backfill_probe (id) SELECT 'k' || lpad(n::text, 2, '0') FROM generate_series(1, 10) AS n",
                    logger: TestDatabase.logger)
                /// A backfill counting its changes of each row, in batches of two; its batches through `failingFrom` on
                /// or later fail (the statement, and so the batch's changes, undone).
                func probe(failingFrom: String?) -> KeyRangeBackfill {
                    let (failing, from) = (failingFrom != nil, failingFrom ?? "")
                    var backfill = KeyRangeBackfill(
                        name: "test_probe", table: "backfill_probe", key: "id", ready: "SELECT true",
                        change: { after, through in
                            """
                            WITH changed AS (
                                UPDATE backfill_probe SET changes = changes + 1 WHERE id > \(after) AND id <= \(through) RETURNING 1)
                            SELECT CASE WHEN \(failing) AND \(through) >= \(from) THEN count(*)::int / 0 ELSE count(*)::int END FROM changed
                            """
                        }, client: client, logger: TestDatabase.logger)
                    backfill.batch = 2
                    return backfill
                }
                func changes() async throws -> [String] {
                    var rows: [String] = []
                    for try await row in try await client.query(
                        "SELECT id || '=' || changes FROM backfill_probe ORDER BY id", logger: TestDatabase.logger
                    ).decode(String.self) { rows.append(row) }
                    return rows
                }
                func recorded() async throws -> (progress: [String], done: Int) {
                    var progress: [String] = []
                    for try await key in try await client.query(
                        "SELECT last_key FROM storekeeper_backfill_progress WHERE name = 'test_probe'", logger: TestDatabase.logger
                    ).decode(String.self) { progress.append(key) }
                    return (progress, try await TestDatabase.count(client, "SELECT count(*) FROM storekeeper_backfills WHERE name = 'test_probe'"))
                }

                let failure = await #expect(throws: PersistenceError.self) { try await probe(failingFrom: "k08").run() }
                #expect(failure?.message.contains("backfill test_probe stopped") == true, "\(String(describing: failure))")
                #expect(try await changes() == ["k01=1", "k02=1", "k03=1", "k04=1", "k05=1", "k06=1", "k07=0", "k08=0", "k09=0", "k10=0"])
                #expect(try await recorded() == (["k06"], 0))

                #expect(try await probe(failingFrom: nil).run() == 4)
                #expect(try await changes() == (1...10).map { String(format: "k%02d=1", $0) })
                #expect(try await recorded() == ([], 1))
                #expect(try await probe(failingFrom: nil).run() == 0, "done: not walked again")
                #expect(try await changes() == (1...10).map { String(format: "k%02d=1", $0) })
                // A migrate paused while another finished writes its progress after the end: the next run clears it.
                try await client.query(
                    "INSERT INTO storekeeper_backfill_progress (name, last_key, updated_at) VALUES ('test_probe', 'k04', now())",
                    logger: TestDatabase.logger)
                #expect(try await probe(failingFrom: nil).run() == 0)
                #expect(try await recorded() == ([], 1))
            }
        }
    }

    @Test(
        "a batch runs on a session named as the migration's (storekeeper migrate) and free of the database's statement_timeout, which would cut a batch of a large table short"
    )
    func runsAsTheMigration() async throws {
        try await TestDatabase.withFreshDatabase { url in
            try await PostgresClient.withRunning(url.clientConfiguration(), logger: TestDatabase.logger) { client in
                try await SchemaMigrator(client: client, directory: SchemaMigrator.defaultDirectory(), logger: TestDatabase.logger).migrate()
                try await client.query("CREATE TABLE backfill_probe (id text PRIMARY KEY, seen text)", logger: TestDatabase.logger)
                try await client.query("INSERT INTO backfill_probe (id) VALUES ('k1'), ('k2'), ('k3')", logger: TestDatabase.logger)
                try await client.query(
                    PostgresQuery(unsafeSQL: "ALTER DATABASE \"\(url.database)\" SET statement_timeout = '20ms'"), logger: TestDatabase.logger)
            }
            // A client whose every connection has the database's limit.
            try await PostgresClient.withRunning(url.clientConfiguration(), logger: TestDatabase.logger) { (client: PostgresClient) async throws in
                var backfill = KeyRangeBackfill(
                    name: "test_session", table: "backfill_probe", key: "id", ready: "SELECT true",
                    change: { after, through in
                        """
                        WITH changed AS (
                            UPDATE backfill_probe SET seen = current_setting('application_name') || '/' || current_setting('statement_timeout')
                            WHERE id > \(after) AND id <= \(through) AND pg_sleep(0.05) IS NOT NULL RETURNING 1)
                        SELECT count(*)::int FROM changed
                        """
                    }, client: client, logger: TestDatabase.logger)
                backfill.batch = 2
                #expect(try await backfill.run() == 3)
                #expect(try await TestDatabase.count(client, "SELECT count(*) FROM backfill_probe WHERE seen = 'storekeeper migrate/0'") == 3)
                #expect(
                    try await TestDatabase.count(
                        client, "SELECT count(*) FROM pg_stat_activity WHERE pid = pg_backend_pid() AND application_name = 'storekeeper migrate'")
                        == 0,
                    "the connection goes back to the pool as it came")
            }
        }
    }
}
