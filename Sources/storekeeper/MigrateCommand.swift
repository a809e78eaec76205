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
        commandName: "migrate", abstract: "Apply the SQL migrations in sql/ that the database does not have yet.",
        discussion: """
            Safe while the previous release serves: each file commits on its own, and a statement that waits longer than \
            --lock-timeout for a lock (behind a long transaction) gives up, so the requests queued behind it wait no \
            longer, and the file is tried again after a pause (doubling, up to 8 s). After --attempts tries it fails, \
            naming the sessions that blocked it — a concurrent index build too, which waits for every transaction older \
            than it, each for up to --build-lock-timeout (nothing waits for the build). Indexes on large tables are built concurrently; backfills run after the files, in short \
            transactions. Waits for another migrate to finish (and says which process it is). Exit status: 0 when the \
            database is up to date, 1 when a file failed or stayed blocked (what was applied before it stays), 64 for \
            a usage error.
            """)

    @Option(help: "How long one statement may wait for a lock, in milliseconds (10–60000).") var lockTimeout = 500
    @Option(help: "The same for a concurrent index build, which waits for every older transaction (100–600000).")
    var buildLockTimeout = 10_000
    @Option(help: "How many times a file is tried before the upgrade fails (1–100).") var attempts = 10

    func validate() throws {
        guard (10...60_000).contains(lockTimeout) else {
            throw ValidationError("--lock-timeout must be 10 to 60000 milliseconds, got \(lockTimeout)")
        }
        guard (100...600_000).contains(buildLockTimeout) else {
            throw ValidationError("--build-lock-timeout must be 100 to 600000 milliseconds, got \(buildLockTimeout)")
        }
        guard (1...100).contains(attempts) else { throw ValidationError("--attempts must be 1 to 100, got \(attempts)") }
    }

    func run() async throws {
        let url = try operatorDatabaseURL()
        // Run as a deployment's job (deploy/kubernetes, a systemd unit) its warnings go where `serve`'s and `work`'s go,
        // in their format; at a terminal, without the variable, as text.
        let format = ProcessInfo.processInfo.environment["STOREKEEPER_LOG_FORMAT"].map { $0.trimmingCharacters(in: .whitespaces).lowercased() }
        guard let chosen = StorekeeperConfiguration.LogFormat(rawValue: format.flatMap { $0.isEmpty ? nil : $0 } ?? "text") else {
            throw CommandFailure("STOREKEEPER_LOG_FORMAT must be json or text, got \"\(format ?? "")\"")
        }
        bootstrapLogging(format: chosen)
        let logger = {
            var logger = commandLogger("storekeeper.migrate")
            // Its retries, waits and repairs are what an operator watching an upgrade needs to see.
            logger.logLevel = .notice
            return logger
        }()
        let policy = SchemaMigrator.LockPolicy(
            lockTimeout: .milliseconds(lockTimeout), buildLockTimeout: .milliseconds(buildLockTimeout), attempts: attempts)
        let applied = try await PostgresClient.withRunning(url.clientConfiguration(maximumConnections: 2), logger: logger) { client in
            let migrator = try SchemaMigrator(client: client, directory: SchemaMigrator.defaultDirectory(), policy: policy, logger: logger)
            try await ensureReachable(client, url: url, logger: logger)
            // No overall deadline: an index built concurrently on a large table may take minutes; every wait for a
            // lock is bounded by the policy, and waiting for another migrate is said.
            return try await migrator.migrate()
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
        // The pool only says nothing answered in time; one connection of our own says why (a password refused, TLS).
        let cause = await url.connectionFailure(logger: logger)
        throw CommandFailure("cannot reach the database at \(url)" + (cause.map { ": \($0)" } ?? ""))
    }
}
