import Logging
import PostgresNIO

/// The settings of a session that migrates (the files, and the backfills after them): named, so that an operator and a
/// waiting migrator can tell it apart (`storekeeper migrate` in `pg_stat_activity`, docs/operations.md's recipe for a
/// killed `migrate`), and free of a role's `statement_timeout`, which would cut a concurrent index build or a batch of
/// a large table short. A pooled connection goes back as it came: ``leave(_:logger:)``.
enum MigrationSession {
    static func enter(_ connection: PostgresConnection, logger: Logger) async throws {
        try await connection.query("SET application_name = 'storekeeper migrate'", logger: logger)
        try await connection.query("SET statement_timeout = 0", logger: logger)
    }

    static func leave(_ connection: PostgresConnection, logger: Logger) async throws {
        try await connection.query("RESET statement_timeout", logger: logger)
        try await connection.query("RESET application_name", logger: logger)
    }
}
