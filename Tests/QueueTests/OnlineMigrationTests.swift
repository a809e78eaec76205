import Foundation
import PostgresNIO
import StorekeeperRuntime
import Testing

@testable import IntegrationSupport
@testable import Persistence

/// Upgrades of a live install (issue 56): what PostgreSQL does to the requests queued behind a migration, observed on a
/// real cluster, not what the migrator believes it does.
@Suite("Online migrations")
struct OnlineMigrationTests {
    @Test(
        "a file that waits behind a long transaction gives up within its lock timeout, so reads queued behind it go through while that transaction stays open; after its tries it fails naming the blocking session, applies nothing, and applies once that session ends"
    )
    func lockTimeoutBoundsTheQueue() async throws {
        let directory = try Self.directory(adding: ["0999_drill_note.sql": "ALTER TABLE credit_buckets ADD COLUMN drill_note text;\n"])
        defer { try? FileManager.default.removeItem(at: directory) }
        try await TestDatabase.withFreshDatabase { url in
            try await PostgresClient.withRunning(url.clientConfiguration(), logger: TestDatabase.logger) { client in
                try await SchemaMigrator(client: client, directory: SchemaMigrator.defaultDirectory(), logger: TestDatabase.logger).migrate()
                let policy = SchemaMigrator.LockPolicy(
                    lockTimeout: .milliseconds(200), attempts: 3, firstPause: .milliseconds(100), longestPause: .milliseconds(200))
                let migrator = try SchemaMigrator(client: client, directory: directory, policy: policy, logger: TestDatabase.logger)
                try await client.withConnection { report in
                    // A report left open: it holds the table's shared lock until it ends, which the ALTER must wait for.
                    try await report.query("SET application_name = 'long-report'", logger: TestDatabase.logger)
                    try await report.query("SET idle_in_transaction_session_timeout = '60s'", logger: TestDatabase.logger)
                    try await report.query("BEGIN", logger: TestDatabase.logger)
                    try await report.query("SELECT count(*) FROM credit_buckets", logger: TestDatabase.logger)
                    let reportProcess = try await Self.backendProcess(report)
                    let reads = Task {
                        // Reads of the table while the migration tries; without the timeout each would queue behind
                        // the ALTER, itself queued behind the report, and time out here.
                        try await client.withConnection { reader in
                            try await reader.query("SET statement_timeout = '20s'", logger: TestDatabase.logger)
                            var done = 0
                            while !Task.isCancelled {
                                try await reader.query("SELECT count(*) FROM credit_buckets", logger: TestDatabase.logger)
                                done += 1
                                try? await Task.sleep(for: .milliseconds(20))
                            }
                            return done
                        }
                    }
                    let error = await #expect(throws: PersistenceError.self) { try await migrator.migrate() }
                    reads.cancel()
                    let completed = try await reads.value
                    #expect(completed > 0)
                    #expect(error?.code == .migrationBlocked)
                    let message = error?.message ?? ""
                    #expect(message.contains("0999_drill_note.sql") && message.contains("3 times"))
                    #expect(message.contains("process \(reportProcess) \"long-report\""))
                    #expect(message.contains("idle in transaction"))
                    try await report.query("COMMIT", logger: TestDatabase.logger)
                }
                #expect(try await TestDatabase.count(client, "SELECT count(*) FROM storekeeper_migrations WHERE version = 999") == 0)
                #expect(try await Self.hasDrillNote(client) == false)
                #expect(try await migrator.migrate() == ["0999_drill_note.sql"])
                #expect(try await Self.hasDrillNote(client))
            }
        }
    }

    @Test(
        "a file marked outside a transaction builds its index concurrently (which PostgreSQL refuses inside one), and an index a failed build left invalid is built again, not skipped by IF NOT EXISTS"
    )
    func concurrentIndexRebuiltWhenInvalid() async throws {
        let directory = try Self.directory(adding: [
            "0999_drill_index.sql": """
            -- storekeeper: outside a transaction
            CREATE UNIQUE INDEX CONCURRENTLY IF NOT EXISTS drill_values_unique ON drill_values (value);

            """
        ])
        defer { try? FileManager.default.removeItem(at: directory) }
        try await TestDatabase.withFreshDatabase { url in
            try await PostgresClient.withRunning(url.clientConfiguration(), logger: TestDatabase.logger) { client in
                try await SchemaMigrator(client: client, directory: SchemaMigrator.defaultDirectory(), logger: TestDatabase.logger).migrate()
                try await client.query("CREATE TABLE drill_values (value integer)", logger: TestDatabase.logger)
                try await client.query("INSERT INTO drill_values VALUES (1), (1), (2)", logger: TestDatabase.logger)
                // An earlier try that failed on a duplicate: the index stays behind, invalid.
                await #expect(throws: (any Error).self) {
                    try await client.query(
                        "CREATE UNIQUE INDEX CONCURRENTLY drill_values_unique ON drill_values (value)", logger: TestDatabase.logger)
                }
                #expect(try await Self.indexIsValid(client, "drill_values_unique") == false)
                try await client.query(
                    "DELETE FROM drill_values WHERE ctid = (SELECT max(ctid) FROM drill_values WHERE value = 1)", logger: TestDatabase.logger)
                let migrator = try SchemaMigrator(client: client, directory: directory, logger: TestDatabase.logger)
                #expect(try await migrator.migrate() == ["0999_drill_index.sql"])
                #expect(try await Self.indexIsValid(client, "drill_values_unique") == true)
                #expect(try await migrator.migrate() == [])
            }
        }
    }

    @Test(
        "a concurrent build waits under the same lock timeout: behind a writer left in its transaction it fails after its tries naming that session (not waiting for good), and builds once the session ends"
    )
    func concurrentBuildBlocked() async throws {
        let directory = try Self.directory(adding: [
            "0999_drill_index.sql":
                "-- storekeeper: outside a transaction\nCREATE INDEX CONCURRENTLY IF NOT EXISTS drill_values_value ON drill_values (value);\n"
        ])
        defer { try? FileManager.default.removeItem(at: directory) }
        try await TestDatabase.withFreshDatabase { url in
            try await PostgresClient.withRunning(url.clientConfiguration(), logger: TestDatabase.logger) { client in
                try await SchemaMigrator(client: client, directory: SchemaMigrator.defaultDirectory(), logger: TestDatabase.logger).migrate()
                try await client.query("CREATE TABLE drill_values (value integer)", logger: TestDatabase.logger)
                let policy = SchemaMigrator.LockPolicy(
                    lockTimeout: .milliseconds(200), buildLockTimeout: .milliseconds(300), attempts: 2, firstPause: .milliseconds(100),
                    longestPause: .milliseconds(100))
                let migrator = try SchemaMigrator(client: client, directory: directory, policy: policy, logger: TestDatabase.logger)
                try await client.withConnection { writer in
                    try await writer.query("SET application_name = 'long-writer'", logger: TestDatabase.logger)
                    try await writer.query("SET idle_in_transaction_session_timeout = '60s'", logger: TestDatabase.logger)
                    try await writer.query("BEGIN", logger: TestDatabase.logger)
                    try await writer.query("INSERT INTO drill_values VALUES (1)", logger: TestDatabase.logger)
                    let error = await #expect(throws: PersistenceError.self) { try await migrator.migrate() }
                    #expect(error?.code == .migrationBlocked)
                    #expect(error?.message.contains("\"long-writer\"") == true, "\(error?.message ?? "")")
                    #expect(error?.message.contains("0.3 seconds each") == true, "the build's own timeout: \(error?.message ?? "")")
                    try await writer.query("COMMIT", logger: TestDatabase.logger)
                }
                #expect(try await migrator.migrate() == ["0999_drill_index.sql"])
                #expect(try await Self.indexIsValid(client, "drill_values_value") == true)
            }
        }
    }

    @Test(
        "a file outside a transaction may hold only concurrent index builds and drops (refused before anything is applied); a statement that fails names its file"
    )
    func fileRules() async throws {
        let mixed = try Self.directory(adding: [
            "0999_mixed.sql": "-- storekeeper: outside a transaction\nALTER TABLE credit_buckets ADD COLUMN drill_note text;\n"
        ])
        defer { try? FileManager.default.removeItem(at: mixed) }
        #expect(throws: PersistenceError.self) { try SchemaMigrator.load(directory: mixed) }
        let broken = try Self.directory(adding: ["0999_broken.sql": "ALTER TABLE no_such_table ADD COLUMN x text;\n"])
        defer { try? FileManager.default.removeItem(at: broken) }
        try await TestDatabase.withFreshDatabase { url in
            try await PostgresClient.withRunning(url.clientConfiguration(), logger: TestDatabase.logger) { client in
                let migrator = try SchemaMigrator(client: client, directory: broken, logger: TestDatabase.logger)
                let error = await #expect(throws: PersistenceError.self) {
                    try await migrator.migrate()
                }
                #expect(error?.code == .migrationFailed)
                #expect(error?.message.contains("0999_broken.sql") == true && error?.message.contains("no_such_table") == true)
                // Everything before it stays applied, and the session gave back its settings and the lock.
                #expect(try await TestDatabase.count(client, "SELECT count(*) FROM storekeeper_migrations WHERE version = 48") == 1)
                #expect(
                    try await TestDatabase.count(
                        client,
                        "SELECT count(*) FROM pg_locks l JOIN pg_database d ON d.oid = l.database WHERE l.locktype = 'advisory' AND d.datname = current_database()"
                    ) == 0)
            }
        }
    }

    @Test("the migrator finds the index a concurrent build names, and nothing else")
    func concurrentIndexNames() {
        #expect(SchemaMigrator.concurrentIndexName(in: "CREATE INDEX CONCURRENTLY IF NOT EXISTS a_b ON t (x)") == "a_b")
        #expect(SchemaMigrator.concurrentIndexName(in: "\n  create unique index concurrently if not exists a1\n on t (x)") == "a1")
        #expect(SchemaMigrator.concurrentIndexName(in: "CREATE INDEX CONCURRENTLY a_b ON t (x)") == nil)
        #expect(SchemaMigrator.concurrentIndexName(in: "CREATE INDEX IF NOT EXISTS a_b ON t (x)") == nil)
        #expect(SchemaMigrator.concurrentIndexName(in: "CREATE INDEX CONCURRENTLY IF NOT EXISTS \"A; DROP\" ON t (x)") == nil)
        #expect(SchemaMigrator.concurrentIndexName(in: "ALTER TABLE t ADD COLUMN c text") == nil)
    }

    @Test("every shipped file that builds an index concurrently says it runs outside a transaction, and every such statement may run again")
    func shippedConcurrentFilesAreMarked() throws {
        let migrations = try SchemaMigrator.load(directory: SchemaMigrator.defaultDirectory())
        for migration in migrations {
            let statements = SQLScript.statements(in: migration.sql)
            let concurrent = statements.filter { $0.uppercased().contains("CONCURRENTLY") }
            if !concurrent.isEmpty { #expect(migration.outsideTransaction, "\(migration.name)") }
            if migration.outsideTransaction {
                for statement in statements { #expect(SchemaMigrator.runsOutsideTransaction(statement), "\(migration.name): \(statement)") }
            }
        }
    }

    /// The shipped migrations and `extra` files, in a temporary directory.
    static func directory(adding extra: [String: String]) throws -> URL {
        let all = SchemaMigrator.defaultDirectory()
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("sk-sql-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        for name in try FileManager.default.contentsOfDirectory(atPath: all.path) where name.hasSuffix(".sql") {
            try FileManager.default.copyItem(at: all.appendingPathComponent(name), to: directory.appendingPathComponent(name))
        }
        for (name, sql) in extra { try Data(sql.utf8).write(to: directory.appendingPathComponent(name)) }
        return directory
    }

    static func backendProcess(_ connection: PostgresConnection) async throws -> Int32 {
        for try await process in try await connection.query("SELECT pg_backend_pid()", logger: TestDatabase.logger).decode(Int32.self) {
            return process
        }
        return 0
    }

    static func hasDrillNote(_ client: PostgresClient) async throws -> Bool {
        try await TestDatabase.count(
            client, "SELECT count(*) FROM information_schema.columns WHERE table_name = 'credit_buckets' AND column_name = 'drill_note'") == 1
    }

    static func indexIsValid(_ client: PostgresClient, _ name: String) async throws -> Bool? {
        for try await valid in try await client.query(
            "SELECT indisvalid FROM pg_index WHERE indexrelid = to_regclass(\(name))", logger: TestDatabase.logger
        ).decode(Bool.self) { return valid }
        return nil
    }
}
