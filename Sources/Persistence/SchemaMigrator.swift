import Crypto
import Foundation
import Logging
import PostgresNIO

/// Applies the numbered SQL files of `sql/` (`0001_initial.sql`, …) once each, in order, recorded in
/// `storekeeper_migrations`. Safe when several processes migrate at once (a transaction-scoped advisory lock
/// serializes them), and refuses a database that a newer Storekeeper migrated.
public struct SchemaMigrator: Sendable {
    /// One migration file.
    public struct Migration: Sendable, Equatable {
        public var version: Int
        public var name: String
        public var sql: String
        public var checksum: String
    }

    public let migrations: [Migration]
    private let client: PostgresClient
    private let logger: Logger

    public init(client: PostgresClient, directory: URL, logger: Logger) throws(PersistenceError) {
        self.client = client
        self.logger = logger
        self.migrations = try Self.load(directory: directory)
    }

    /// Applies every pending migration, then the backfills they leave (each in short transactions of its own); returns
    /// the names applied.
    @discardableResult
    public func migrate() async throws -> [String] {
        let applied: [String]
        do {
            applied = try await applyPending()
        } catch let error as PostgresTransactionError {
            // Our own refusal (newer database, changed file) is the error worth reporting, not the rollback around it.
            if let refusal = error.closureError as? PersistenceError { throw refusal }
            throw error
        }
        try await SubscriptionStoreBackfill(client: client, logger: logger).run()
        return applied
    }

    private func applyPending() async throws -> [String] {
        try await client.withTransaction(logger: logger) { connection in
            try await connection.query("SELECT pg_advisory_xact_lock(\(Self.lockKey))", logger: logger)
            try await connection.query(
                """
                CREATE TABLE IF NOT EXISTS storekeeper_migrations (
                    version integer PRIMARY KEY, name text NOT NULL, checksum text NOT NULL,
                    applied_at timestamptz NOT NULL DEFAULT now())
                """,
                logger: logger
            )
            let applied = try await appliedMigrations(on: connection)
            try check(applied: applied)
            var names: [String] = []
            for migration in migrations where applied[migration.version] == nil {
                for statement in SQLScript.statements(in: migration.sql) {
                    try await connection.query(PostgresQuery(unsafeSQL: statement), logger: logger)
                }
                try await connection.query(
                    """
                    INSERT INTO storekeeper_migrations (version, name, checksum)
                    VALUES (\(migration.version), \(migration.name), \(migration.checksum))
                    """,
                    logger: logger
                )
                names.append(migration.name)
            }
            return names
        }
    }

    /// Names of migrations not yet applied; throws if the database is newer than this code or a file changed.
    public func pendingMigrations() async throws -> [String] {
        let applied = try await client.withConnection { connection -> [Int: String] in
            let exists = try await connection.query(
                "SELECT to_regclass('storekeeper_migrations') IS NOT NULL", logger: logger)
            for try await present in exists.decode(Bool.self) where !present { return [:] }
            return try await appliedMigrations(on: connection)
        }
        try check(applied: applied)
        return migrations.filter { applied[$0.version] == nil }.map(\.name)
    }

    private func appliedMigrations(on connection: PostgresConnection) async throws -> [Int: String] {
        let rows = try await connection.query("SELECT version, checksum FROM storekeeper_migrations", logger: logger)
        var applied: [Int: String] = [:]
        for try await (version, checksum) in rows.decode((Int, String).self) { applied[version] = checksum }
        return applied
    }

    private func check(applied: [Int: String]) throws(PersistenceError) {
        let known = Dictionary(uniqueKeysWithValues: migrations.map { ($0.version, $0) })
        if let unknown = applied.keys.filter({ known[$0] == nil }).max() {
            throw PersistenceError(
                .databaseNewerThanCode,
                "the database has migration \(unknown), which this Storekeeper does not know: it was migrated by a newer version"
            )
        }
        for (version, checksum) in applied where known[version]?.checksum != checksum {
            throw PersistenceError(.migrationChanged, "migration \(known[version]?.name ?? "\(version)") changed after it was applied")
        }
    }

    static let lockKey: Int64 = 0x5354_4f52_454b  // "STOREK"

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
            migrations.append(Migration(version: version, name: name, sql: sql, checksum: checksum))
        }
        guard !migrations.isEmpty else { throw PersistenceError(.migrationsNotFound, "no .sql files in \(directory.path)") }
        if Set(migrations.map(\.version)).count != migrations.count {
            throw PersistenceError(.migrationFileInvalid, "two migration files share a version number")
        }
        return migrations
    }

    /// Where the SQL files are: `$STOREKEEPER_SQL_DIR`, the source tree this binary was built from, an installed
    /// `share/storekeeper/sql` beside the executable, or `./sql`.
    public static func defaultDirectory(environment: [String: String] = ProcessInfo.processInfo.environment) -> URL {
        var candidates: [URL] = []
        if let configured = environment["STOREKEEPER_SQL_DIR"] { return URL(fileURLWithPath: configured) }
        candidates.append(
            URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
                .deletingLastPathComponent().appendingPathComponent("sql"))
        let executable = URL(fileURLWithPath: CommandLine.arguments.first ?? "").resolvingSymlinksInPath()
        candidates.append(
            executable.deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("share/storekeeper/sql"))
        candidates.append(URL(fileURLWithPath: FileManager.default.currentDirectoryPath).appendingPathComponent("sql"))
        return candidates.first { FileManager.default.fileExists(atPath: $0.path) } ?? candidates.last!
    }
}
