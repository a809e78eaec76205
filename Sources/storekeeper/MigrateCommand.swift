import ArgumentParser
import Foundation
import Jobs
import Logging
import Persistence
import PostgresNIO
import StatementFencing
import StorekeeperRuntime

struct MigrateCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "migrate", abstract: "Apply the SQL migrations in sql/ that the database does not have yet.")

    func run() async throws {
        let url = try operatorDatabaseURL()
        let logger = commandLogger("storekeeper.migrate")
        let applied = try await PostgresClient.withRunning(url.clientConfiguration(maximumConnections: 2), logger: logger) { client in
            let migrator = try SchemaMigrator(client: client, directory: SchemaMigrator.defaultDirectory(), logger: logger)
            try await ensureReachable(client, url: url, logger: logger)
            return try await withCommandTimeout(.seconds(300)) { try await migrator.migrate() }
        }
        say(applied.isEmpty ? "database is up to date" : "applied \(applied.joined(separator: ", "))")
    }
}

/// Bounds a command's database work so an unreachable database fails with a message instead of hanging.
func withCommandTimeout<Result: Sendable>(
    _ timeout: Duration, _ operation: @escaping @Sendable () async throws -> Result
) async throws -> Result {
    do {
        return try await withDeadline(timeout, operation)
    } catch is DeadlineExceeded {
        throw CommandFailure("timed out after \(timeout) waiting for the database")
    }
}

/// Fails within 5 s, with one line naming the database, when it cannot be reached.
func ensureReachable(_ client: PostgresClient, url: DatabaseURL, logger: Logger) async throws {
    do {
        try await withCommandTimeout(.seconds(5)) { try await client.reachable(logger: logger) }
    } catch {
        throw CommandFailure("cannot reach the database at \(url)")
    }
}
