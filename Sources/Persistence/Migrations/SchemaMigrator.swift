import Crypto
import Foundation
import Logging
import PostgresNIO

/// Applies the numbered SQL files of `sql/` (`0001_initial.sql`, …) once each, in order, recorded in
/// `storekeeper_migrations`, so that a live install keeps serving while it upgrades: each file commits on its own, under a
/// `lock_timeout` (a statement that would queue behind a long transaction gives up, so the reads and writes queued behind
/// it wait at most that long, and is tried again after a pause), and a file marked `-- storekeeper: outside a transaction`
/// runs statement by statement, for `CREATE INDEX CONCURRENTLY`. Safe when several processes migrate at once (a session
/// advisory lock serializes them), and refuses a database that a newer Storekeeper migrated.
public struct SchemaMigrator: Sendable {
    /// One migration file.
    public struct Migration: Sendable, Equatable {
        public var version: Int
        public var name: String
        public var sql: String
        public var checksum: String
        /// Run statement by statement in autocommit (the file says `-- storekeeper: outside a transaction`): each statement
        /// must be safe to run again, as a failure part of the way is retried from the file's first statement.
        public var outsideTransaction: Bool
    }

    /// How long a migration's statement may wait for a lock, and how often it is tried before the upgrade fails.
    public struct LockPolicy: Sendable, Equatable {
        /// A statement waiting longer for a lock gives up (`lock_timeout`); whatever queued behind it waited as long.
        public var lockTimeout: Duration
        /// The same for a concurrent index build, which waits for every transaction older than it, one at a time, and
        /// which nothing waits for: long enough for a busy install's ordinary transactions (the upgrade drill saw
        /// 500 ms fail six times under its traffic), short enough that a session left in a transaction fails the build.
        public var buildLockTimeout: Duration
        /// How many times a file is tried before the migration fails, naming what blocked it.
        public var attempts: Int
        /// The pause after the first failed try; it doubles after each, up to `longestPause`.
        public var firstPause: Duration
        public var longestPause: Duration

        public init(
            lockTimeout: Duration = .milliseconds(500), buildLockTimeout: Duration = .seconds(10), attempts: Int = 10,
            firstPause: Duration = .milliseconds(250), longestPause: Duration = .seconds(8)
        ) {
            self.lockTimeout = lockTimeout
            self.buildLockTimeout = buildLockTimeout
            self.attempts = attempts
            self.firstPause = firstPause
            self.longestPause = longestPause
        }

        /// The default: half a second per try (ten seconds for a concurrent build), ten tries over about 45 s.
        public static let online = LockPolicy()

        /// A timeout as PostgreSQL's setting takes it: whole milliseconds, at least 1 (0 would mean no limit).
        static func milliseconds(_ duration: Duration) -> Int64 {
            max(1, duration.components.seconds * 1000 + duration.components.attoseconds / 1_000_000_000_000_000)
        }
    }

    public let migrations: [Migration]
    let client: PostgresClient
    let logger: Logger
    let policy: LockPolicy

    public init(client: PostgresClient, directory: URL, policy: LockPolicy = .online, logger: Logger) throws(PersistenceError) {
        self.client = client
        self.logger = logger
        self.policy = policy
        self.migrations = try Self.load(directory: directory)
    }

    /// Applies every pending migration, each committed on its own, then the backfills they leave (each in short
    /// transactions of its own); returns the names applied.
    @discardableResult
    public func migrate() async throws -> [String] {
        let applied = try await client.withConnection { connection in
            try await waitForTheMigrationLock(on: connection)
            do {
                // Named and free of a role's statement_timeout (MigrationSession); every lock wait is bounded.
                try await MigrationSession.enter(connection, logger: logger)
                try await setLockTimeout(policy.lockTimeout, on: connection)
                let names = try await applyPending(on: connection)
                try await release(connection)
                return names
            } catch {
                // The connection goes back to the pool: it must keep neither the lock nor the settings (a broken one
                // loses both anyway).
                try? await release(connection)
                throw error
            }
        }
        // Said before the backfills, which may run for minutes: a migrate stopped in one has said what it applied.
        if let last = applied.last { logger.notice("migrations applied", metadata: ["count": "\(applied.count)", "last": "\(last)"]) }
        for backfill in [KeyRangeBackfill.subscriptionStores, KeyRangeBackfill.stripeEventEnvelopes] {
            try await backfill(client, logger).run()
        }
        return applied
    }

    private func release(_ connection: PostgresConnection) async throws {
        try await connection.query("RESET lock_timeout", logger: logger)
        try await MigrationSession.leave(connection, logger: logger)
        try await connection.query("SELECT pg_advisory_unlock(\(Self.lockKey))", logger: logger)
    }

    /// Takes the session lock that serializes migrators, trying again every 100 ms rather than waiting in
    /// `pg_advisory_lock`: a migrator waiting there is inside a statement, whose transaction a concurrent index build of
    /// the migrator holding the lock would wait for — a deadlock.
    private func waitForTheMigrationLock(on connection: PostgresConnection) async throws {
        var said = false
        while true {
            for try await taken in try await connection.query("SELECT pg_try_advisory_lock(\(Self.lockKey))", logger: logger).decode(Bool.self)
            where taken { return }
            if !said {
                let holder = try await migrationLockHolder(on: connection)
                logger.warning("waiting for another storekeeper migrate to finish", metadata: ["holder": "\(holder)"])
                said = true
            }
            try await Task.sleep(for: .milliseconds(100))
        }
    }

    /// The session holding the migration lock, for the operator: its process id and application name.
    private func migrationLockHolder(on connection: PostgresConnection) async throws -> String {
        let rows = try await connection.query(
            """
            SELECT a.pid, coalesce(a.application_name, '') FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
            WHERE l.locktype = 'advisory' AND l.granted AND l.objsubid = 1
              AND l.classid = \(Int64(Self.lockKey >> 32))::oid AND l.objid = \(Int64(Self.lockKey & 0xffff_ffff))::oid
            """, logger: logger)
        for try await (process, application) in rows.decode((Int32, String).self) { return "process \(process) \"\(application)\"" }
        return "a session that has ended"
    }

    private func applyPending(on connection: PostgresConnection) async throws -> [String] {
        // Created only when missing: `CREATE TABLE IF NOT EXISTS` needs CREATE on the schema even when the table is
        // there, and an application role without it (docs/operations.md, "A separate application role") is then
        // refused although nothing is pending; one that lacks it where the table is missing is told which role to use.
        do {
            try await connection.query(
                """
                DO $$ BEGIN
                    IF to_regclass('storekeeper_migrations') IS NULL THEN
                        CREATE TABLE storekeeper_migrations (
                            version integer PRIMARY KEY, name text NOT NULL, checksum text NOT NULL,
                            applied_at timestamptz NOT NULL DEFAULT now());
                    END IF;
                END $$
                """,
                logger: logger
            )
        } catch let error as PSQLError where error.serverInfo?[.sqlState] == Self.insufficientPrivilege {
            throw PersistenceError(
                .migrationFailed, "the migrations' table cannot be created: \(error.serverInfo?[.message] ?? "permission denied")\(Self.ownerHint)")
        }
        let applied = try await appliedMigrations(on: connection)
        // A database a newer release migrated already (a rollout in progress, a rollback, a restart of this release's
        // `serve` whose unit migrates first) has nothing for this release to do when all of its files are applied: the
        // newer files only expand the schema (docs/operations.md). Files of its own still pending behind newer ones are
        // refused: this release cannot know what they would do after those.
        let pending = migrations.filter { applied[$0.version] == nil }
        try check(applied: applied, newerAllowed: pending.isEmpty)
        if let newest = applied.keys.filter({ version in !migrations.contains { $0.version == version } }).max() {
            logger.notice(
                "the database is ahead of this release (it has migration \(newest), which this Storekeeper does not know): every migration of this release is applied, nothing to do"
            )
        }
        var names: [String] = []
        for migration in migrations where applied[migration.version] == nil {
            try await apply(migration, on: connection)
            names.append(migration.name)
        }
        return names
    }

    /// Names of migrations not yet applied; throws if a file changed, or if the database is newer than this code —
    /// unless `newerAllowed`: readiness, for a release still serving while the next one's migrations are applied (they
    /// only expand the schema, operations.md).
    public func pendingMigrations(newerAllowed: Bool = false) async throws -> [String] {
        let applied = try await client.withFencedConnection { connection -> [Int: String] in
            let exists = try await connection.query(
                "SELECT to_regclass('storekeeper_migrations') IS NOT NULL", logger: logger)
            for try await present in exists.decode(Bool.self) where !present { return [:] }
            return try await appliedMigrations(on: connection)
        }
        try check(applied: applied, newerAllowed: newerAllowed)
        return migrations.filter { applied[$0.version] == nil }.map(\.name)
    }

    func appliedMigrations(on connection: PostgresConnection) async throws -> [Int: String] {
        let rows = try await connection.query("SELECT version, checksum FROM storekeeper_migrations", logger: logger)
        var applied: [Int: String] = [:]
        for try await (version, checksum) in rows.decode((Int, String).self) { applied[version] = checksum }
        return applied
    }

    private func check(applied: [Int: String], newerAllowed: Bool = false) throws(PersistenceError) {
        let known = Dictionary(uniqueKeysWithValues: migrations.map { ($0.version, $0) })
        if !newerAllowed, let unknown = applied.keys.filter({ known[$0] == nil }).max() {
            throw PersistenceError(
                .databaseNewerThanCode,
                "the database has migration \(unknown), which this Storekeeper does not know: it was migrated by a newer version, and this release's own migrations still pending cannot be applied after it"
            )
        }
        for (version, checksum) in applied where known[version].map({ $0.checksum != checksum }) ?? false {
            throw PersistenceError(.migrationChanged, "migration \(known[version]?.name ?? "\(version)") changed after it was applied")
        }
    }

    static let lockKey: Int64 = 0x5354_4f52_454b  // "STOREK"
    /// The first line that makes a file run outside a transaction.
    static let outsideTransactionMark = "-- storekeeper: outside a transaction"

    static func load(directory: URL) throws(PersistenceError) -> [Migration] {
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: directory.path) else {
            throw PersistenceError(.migrationsNotFound, "no migrations directory at \(directory.path)")
        }
        var migrations: [Migration] = []
        for name in names.sorted() where name.hasSuffix(".sql") {
            guard let version = Int(name.prefix { $0.isNumber }), version > 0 else {
                throw PersistenceError(.migrationFileInvalid, "migration \(name) does not start with a version number")
            }
            guard let sql = try? String(contentsOf: directory.appendingPathComponent(name), encoding: .utf8) else {
                throw PersistenceError(.migrationFileInvalid, "cannot read migration \(name)")
            }
            let checksum = SHA256.hash(data: Data(sql.utf8)).map { String(format: "%02x", $0) }.joined()
            let outside = sql.split(separator: "\n", maxSplits: 1).first?.trimmingCharacters(in: .whitespaces) == Self.outsideTransactionMark
            if outside, let other = SQLScript.statements(in: sql).first(where: { !Self.runsOutsideTransaction($0) }) {
                let words = other.split(whereSeparator: \.isWhitespace).prefix(4).joined(separator: " ")
                throw PersistenceError(
                    .migrationFileInvalid,
                    "migration \(name) runs outside a transaction, where only CREATE INDEX CONCURRENTLY IF NOT EXISTS and DROP INDEX CONCURRENTLY IF EXISTS may stand; it has \(words) …"
                )
            }
            migrations.append(Migration(version: version, name: name, sql: sql, checksum: checksum, outsideTransaction: outside))
        }
        guard !migrations.isEmpty else { throw PersistenceError(.migrationsNotFound, "no .sql files in \(directory.path)") }
        if Set(migrations.map(\.version)).count != migrations.count {
            throw PersistenceError(.migrationFileInvalid, "two migration files share a version number")
        }
        return migrations
    }

    /// Where the SQL files are: `$STOREKEEPER_SQL_DIR`, an installed `share/storekeeper/sql` beside the executable, the
    /// source tree this binary was built from, or `./sql`.
    public static func defaultDirectory(environment: [String: String] = ProcessInfo.processInfo.environment) -> URL {
        var candidates: [URL] = []
        if let configured = environment["STOREKEEPER_SQL_DIR"] { return URL(fileURLWithPath: configured) }
        // An installed binary's own files before the source tree it was built from: built on the host it runs on, a
        // `git pull` in the checkout would otherwise hand the installed release the next one's migrations. A build run
        // from `.build` has no `share` beside it and finds the source tree.
        let executable = RunningExecutable.url
        candidates.append(
            executable.deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("share/storekeeper/sql"))
        candidates.append(
            URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
                .deletingLastPathComponent().appendingPathComponent("sql"))
        candidates.append(URL(fileURLWithPath: FileManager.default.currentDirectoryPath).appendingPathComponent("sql"))
        return candidates.first { FileManager.default.fileExists(atPath: $0.path) } ?? candidates.last!
    }
}
