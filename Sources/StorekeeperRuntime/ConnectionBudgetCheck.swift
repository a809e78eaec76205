import Logging
import Persistence
import PostgresNIO
import ServiceLifecycle
import StatementFencing

/// Compares the pool with the server once at start and says so in the log: an error when the pool can never fit, a
/// warning when it does not fit beside what is open now. A database not reachable yet is readiness's to report.
///
/// The service then lives until the group shuts it down: `ServiceGroup` treats any service that returns while it is
/// shutting down another as an unexpected finish and the process exits 1, which a check ending just after SIGTERM did.
public struct ConnectionBudgetCheck: Service {
    let client: PostgresClient
    let pool: Int
    /// The server's name in the log when it is not `DATABASE_URL`'s.
    let server: String?
    let logger: Logger

    /// - Parameter server: the server's name in the log when it is not `DATABASE_URL`'s (`the read replica
    ///   (STOREKEEPER_REPLICA_URL)`).
    public init(client: PostgresClient, pool: Int, server: String? = nil, logger: Logger) {
        self.client = client
        self.pool = pool
        self.server = server
        self.logger = logger
    }

    public func run() async {
        await cancelWhenGracefulShutdown { await check() }
        try? await gracefulShutdown()
    }

    /// What the log says after "connections": nothing for `DATABASE_URL`'s server, whose lines stay as they were.
    private var destination: String { server.map { " to \($0)" } ?? "" }

    private func check() async {
        let budget: ConnectionBudget
        do {
            guard
                let read = try await withDeadline(
                    .seconds(5),
                    {
                        try await client.withFencedConnection { try await ConnectionBudget.read(pool: pool, on: $0, logger: logger) }
                    })
            else { return }
            budget = read
        } catch {
            logger.debug("could not compare the connection pool\(destination) with max_connections", metadata: ["error": "\(error)"])
            return
        }
        let metadata: Logger.Metadata = [
            "server": "\(server ?? "DATABASE_URL")", "pool": "\(budget.pool)", "max_connections": "\(budget.maxConnections)",
            "reserved": "\(budget.reserved)",
            "open": "\(budget.open)",
        ]
        switch budget.verdict {
        case .fits:
            logger.debug("connection pool\(destination) fits the server", metadata: metadata)
        case .crowded(let free):
            logger.warning(
                "this process may open \(budget.pool) database connections\(destination) but only \(free) are free now; raise max_connections or lower STOREKEEPER_WORKER_CONCURRENCY",
                metadata: metadata)
        case .exceeds(let allowed):
            logger.error(
                "this process may open \(budget.pool) database connections\(destination) but the server allows \(allowed); raise max_connections or lower STOREKEEPER_WORKER_CONCURRENCY",
                metadata: metadata)
        }
    }
}
