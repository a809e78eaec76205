import Logging
import PostgresNIO

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
    /// The most this process keeps (`database.connections`).
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
    public static func read(pool: Int, on connection: PostgresConnection, logger: Logger) async throws -> ConnectionBudget? {
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
