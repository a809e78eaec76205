import Logging
import PostgresNIO
import ServiceLifecycle
import StatementFencing

/// What PostgreSQL allows against what one process may open: a `serve` or `work` whose pool can outgrow the server's
/// `max_connections` works until the first busy hour, then fails with "too many clients". Compared once at start,
/// where an operator adding a process reads it.
public struct ConnectionBudget: Sendable, Equatable {
    /// The server's `max_connections`.
    public var maxConnections: Int
    /// Slots only superusers (and, from PostgreSQL 16, `pg_use_reserved_connections`) may take.
    public var reserved: Int
    /// Client connections other processes hold now.
    public var open: Int
    /// The most this process keeps (``StorekeeperConfiguration/databaseConnections``).
    public var pool: Int

    public init(maxConnections: Int, reserved: Int, open: Int, pool: Int) {
        self.maxConnections = maxConnections
        self.reserved = reserved
        self.open = open
        self.pool = pool
    }

    public enum Verdict: Sendable, Equatable {
        case fits
        /// The pool fits the server but not beside the connections open now.
        case crowded(free: Int)
        /// The pool alone is more than the server lets an ordinary role open.
        case exceeds(allowed: Int)
    }

    public var verdict: Verdict {
        let allowed = maxConnections - reserved
        if pool > allowed { return .exceeds(allowed: allowed) }
        let free = allowed - open
        return pool > free ? .crowded(free: free) : .fits
    }

    /// Reads the server's settings and the connections open now (not counting the one asking).
    static func read(pool: Int, on connection: PostgresConnection, logger: Logger) async throws -> ConnectionBudget? {
        let rows = try await connection.query(
            """
            SELECT current_setting('max_connections')::int,
                   current_setting('superuser_reserved_connections')::int + coalesce(current_setting('reserved_connections', true)::int, 0),
                   (SELECT count(*)::int - 1 FROM pg_stat_activity WHERE backend_type = 'client backend')
            """, logger: logger)
        for try await (maxConnections, reserved, open) in rows.decode((Int, Int, Int).self) {
            return ConnectionBudget(maxConnections: maxConnections, reserved: reserved, open: open, pool: pool)
        }
        return nil
    }
}

/// Compares the pool with the server once at start and says so in the log: an error when the pool can never fit, a
/// warning when it does not fit beside what is open now. A database not reachable yet is readiness's to report.
///
/// The service then lives until the group shuts it down: `ServiceGroup` treats any service that returns while it is
/// shutting down another as an unexpected finish and the process exits 1, which a check ending just after SIGTERM did.
public struct ConnectionBudgetCheck: Service {
    let client: PostgresClient
    let pool: Int
    let logger: Logger

    public init(client: PostgresClient, pool: Int, logger: Logger) {
        self.client = client
        self.pool = pool
        self.logger = logger
    }

    public func run() async {
        await cancelWhenGracefulShutdown { await check() }
        try? await gracefulShutdown()
    }

    private func check() async {
        let budget: ConnectionBudget
        do {
            guard
                let read = try await withDeadline(
                    .seconds(5),
                    {
                        try await client.withConnection { try await ConnectionBudget.read(pool: pool, on: $0, logger: logger) }
                    })
            else { return }
            budget = read
        } catch {
            logger.debug("could not compare the connection pool with max_connections", metadata: ["error": "\(error)"])
            return
        }
        let metadata: Logger.Metadata = [
            "pool": "\(budget.pool)", "max_connections": "\(budget.maxConnections)", "reserved": "\(budget.reserved)",
            "open": "\(budget.open)",
        ]
        switch budget.verdict {
        case .fits:
            logger.debug("connection pool fits the server", metadata: metadata)
        case .crowded(let free):
            logger.warning(
                "this process may open \(budget.pool) database connections but only \(free) are free now; raise max_connections or lower STOREKEEPER_WORKER_CONCURRENCY",
                metadata: metadata)
        case .exceeds(let allowed):
            logger.error(
                "this process may open \(budget.pool) database connections but the server allows \(allowed); raise max_connections or lower STOREKEEPER_WORKER_CONCURRENCY",
                metadata: metadata)
        }
    }
}
