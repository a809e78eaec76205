import Logging
import PostgresNIO

extension SchemaMigrator {
    /// Applies one file, and tries it again after a pause when a statement gave up waiting for a lock: the statement
    /// queued behind a long transaction (an `ALTER TABLE` behind an open read of that table) would otherwise hold every
    /// later read and write of the table in the queue behind it for as long as that transaction lasts.
    func apply(_ migration: Migration, on connection: PostgresConnection) async throws {
        let process = try await backendProcess(of: connection)
        var pause = policy.firstPause
        var attempt = 1
        while true {
            let watch = LockWaitWatch(client: client, process: process, logger: logger)
            let (outcome, blockers) = await watch.run { try await self.run(migration, on: connection) }
            guard case .failure(let error) = outcome else { return }
            guard Self.gaveUpWaitingForLock(error) else { throw Self.failure(of: migration, error) }
            guard attempt < policy.attempts else {
                throw PersistenceError(
                    .migrationBlocked,
                    "migration \(migration.name) gave up waiting for a lock \(attempt) times (\(migration.outsideTransaction ? policy.buildLockTimeout : policy.lockTimeout) each) and was not applied; "
                        + LockWaitWatch.describe(blockers))
            }
            logger.warning(
                "migration waited too long for a lock; trying again",
                metadata: [
                    "migration": "\(migration.name)", "attempt": "\(attempt)", "pause": "\(pause)",
                    "blocked_by": "\(LockWaitWatch.describe(blockers))",
                ])
            try await Task.sleep(for: pause)
            pause = min(pause * 2, policy.longestPause)
            attempt += 1
        }
    }

    /// Runs the file: in one transaction, or (a file of concurrent index builds) statement by statement. The session
    /// carries the lock timeout (``SchemaMigrator/migrate()``): a concurrent build waits for the transactions open when
    /// it starts, and one left open would otherwise hold it, and every later migrator, for good.
    private func run(_ migration: Migration, on connection: PostgresConnection) async throws {
        let statements = SQLScript.statements(in: migration.sql)
        if migration.outsideTransaction {
            try await setLockTimeout(policy.buildLockTimeout, on: connection)
            for statement in statements {
                try await repairInvalidIndex(builtBy: statement, on: connection)
                try await connection.query(PostgresQuery(unsafeSQL: statement), logger: logger)
            }
            try await record(migration, on: connection)
            try await setLockTimeout(policy.lockTimeout, on: connection)
            return
        }
        try await connection.withTransaction(logger: logger) { connection in
            for statement in statements {
                try await connection.query(PostgresQuery(unsafeSQL: statement), logger: logger)
            }
            try await record(migration, on: connection)
        }
    }

    /// Names the file a statement of which failed, with PostgreSQL's message (never its detail, which may hold rows).
    static func failure(of migration: Migration, _ error: any Error) -> any Error {
        let error = (error as? PostgresTransactionError)?.closureError ?? error
        guard let message = (error as? PSQLError)?.serverInfo?[.message] else { return error }
        let hint = (error as? PSQLError)?.serverInfo?[.sqlState] == SchemaMigrator.insufficientPrivilege ? SchemaMigrator.ownerHint : ""
        return PersistenceError(.migrationFailed, "migration \(migration.name) failed and was not applied: \(message)\(hint)")
    }

    /// SQLSTATE 42501, and what it most often means here: an application role without CREATE or ownership
    /// (docs/operations.md, "A separate application role").
    public static let insufficientPrivilege = "42501"
    static let ownerHint = " (storekeeper migrate must run as the role that owns the database and its tables, not the application's)"

    func setLockTimeout(_ timeout: Duration, on connection: PostgresConnection) async throws {
        try await connection.query(PostgresQuery(unsafeSQL: "SET lock_timeout = \(LockPolicy.milliseconds(timeout))"), logger: logger)
    }

    private func record(_ migration: Migration, on connection: PostgresConnection) async throws {
        try await connection.query(
            """
            INSERT INTO storekeeper_migrations (version, name, checksum)
            VALUES (\(migration.version), \(migration.name), \(migration.checksum))
            """,
            logger: logger
        )
    }

    /// A concurrent index build that failed (a duplicate, a cancelled upgrade) leaves its index behind, marked invalid:
    /// `IF NOT EXISTS` would then skip it for good. Such an index is dropped before the statement builds it again.
    private func repairInvalidIndex(builtBy statement: String, on connection: PostgresConnection) async throws {
        guard let name = Self.concurrentIndexName(in: statement) else { return }
        let rows = try await connection.query(
            "SELECT NOT indisvalid FROM pg_index WHERE indexrelid = to_regclass(\(name))", logger: logger)
        for try await invalid in rows.decode(Bool.self) where invalid {
            logger.notice("dropping an index a failed build left invalid", metadata: ["index": "\(name)"])
            try await connection.query(PostgresQuery(unsafeSQL: "DROP INDEX CONCURRENTLY IF EXISTS \(name)"), logger: logger)
        }
    }

    /// A statement a file outside a transaction may hold: a concurrent index build or drop, each safe to run again.
    static func runsOutsideTransaction(_ statement: String) -> Bool {
        let words = statement.split(whereSeparator: \.isWhitespace).prefix(5).map { $0.lowercased() }
        return concurrentIndexName(in: statement) != nil || words == ["drop", "index", "concurrently", "if", "exists"]
    }

    /// The index a `CREATE [UNIQUE] INDEX CONCURRENTLY IF NOT EXISTS name …` statement builds; `nil` for any other
    /// statement or a name that is not a plain lower-case identifier.
    static func concurrentIndexName(in statement: String) -> String? {
        var words = statement.split(whereSeparator: \.isWhitespace).map { $0.lowercased() }[...]
        guard words.popFirst() == "create" else { return nil }
        if words.first == "unique" { words.removeFirst() }
        guard Array(words.prefix(5)) == ["index", "concurrently", "if", "not", "exists"] else { return nil }
        guard let name = words.dropFirst(5).first, name.allSatisfy({ $0.isLowercase || $0.isNumber || $0 == "_" }) else { return nil }
        return name
    }

    /// `lock_timeout` fired (SQLSTATE 55P03), inside the file's transaction or outside one.
    static func gaveUpWaitingForLock(_ error: any Error) -> Bool {
        let error = (error as? PostgresTransactionError)?.closureError ?? error
        return (error as? PSQLError)?.serverInfo?[.sqlState] == "55P03"
    }

    private func backendProcess(of connection: PostgresConnection) async throws -> Int32 {
        for try await process in try await connection.query("SELECT pg_backend_pid()", logger: logger).decode(Int32.self) { return process }
        return 0
    }
}
