import Foundation
import Logging
import PostgresNIO

/// Watches, from a second connection, which sessions a migration's statement waits behind — once the statement gives up
/// (`lock_timeout`) it no longer waits, and PostgreSQL can no longer say what held it.
struct LockWaitWatch: Sendable {
    /// A session that held a lock the migration waited for.
    struct Blocker: Sendable, Equatable {
        var process: Int32
        var application: String
        var user: String
        var state: String
        /// How long its transaction had been open when it was last seen blocking.
        var transactionSeconds: Double
    }

    let client: PostgresClient
    let process: Int32
    let logger: Logger
    var interval: Duration = .milliseconds(50)

    /// Runs `operation`, and returns its outcome with the sessions last seen blocking it.
    func run(_ operation: () async throws -> Void) async -> (Result<Void, any Error>, [Blocker]) {
        let watcher = Task { await watch() }
        let outcome: Result<Void, any Error>
        do {
            try await operation()
            outcome = .success(())
        } catch {
            outcome = .failure(error)
        }
        watcher.cancel()
        return (outcome, await watcher.value)
    }

    private func watch() async -> [Blocker] {
        var seen: [Blocker] = []
        while !Task.isCancelled {
            if let blockers = try? await blockers(), !blockers.isEmpty { seen = blockers }
            do { try await Task.sleep(for: interval) } catch { break }
        }
        return seen
    }

    private func blockers() async throws -> [Blocker] {
        let rows = try await client.fencedQuery(
            """
            SELECT pid, coalesce(application_name, ''), coalesce(usename::text, ''), coalesce(state, ''),
                coalesce(extract(epoch FROM now() - xact_start), 0)::float8
            FROM pg_stat_activity WHERE pid = ANY(pg_blocking_pids(\(process))) ORDER BY xact_start
            """, logger: logger)
        var blockers: [Blocker] = []
        for try await (process, application, user, state, seconds) in rows.decode((Int32, String, String, String, Double).self) {
            blockers.append(Blocker(process: process, application: application, user: user, state: state, transactionSeconds: seconds))
        }
        return blockers
    }

    /// One line for the operator: which sessions, and what to do. Never the sessions' query text, which may hold data.
    static func describe(_ blockers: [Blocker]) -> String {
        guard !blockers.isEmpty else { return "no blocking session was seen; run storekeeper migrate again" }
        let sessions = blockers.map { blocker in
            let application = blocker.application.isEmpty ? "" : " \"\(blocker.application)\""
            return "process \(blocker.process)\(application) of user \(blocker.user), \(blocker.state), its transaction open "
                + String(format: "%.1f s", blocker.transactionSeconds)
        }
        return "blocked by " + sessions.joined(separator: "; ")
            + " — end that transaction (SELECT pg_terminate_backend(\(blockers[0].process))) or wait for it, then run storekeeper migrate again"
    }
}
