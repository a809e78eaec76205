import Jobs
import Logging
import PostgresNIO
import ServiceLifecycle
import StatementFencing

/// A process's running `PostgresClient` (``PostgresClient/startRunning()``, before the other services start, so none
/// asks for a connection before the pool runs) as a `Service` that closes the pool on graceful shutdown and waits for
/// that at most ``PostgresClient/closeTimeout`` (a pool that never finishes closing would keep the process alive).
public struct DatabasePoolService: Service {
    let pool: Task<Void, Never>
    let logger: Logger

    public init(running pool: Task<Void, Never>, logger: Logger) {
        self.pool = pool
        self.logger = logger
    }

    public func run() async {
        try? await gracefulShutdown()
        await PostgresClient.close(pool, logger: logger)
    }
}

extension PostgresClient {
    /// How long closing the pool may take before the process goes on without it.
    static let closeTimeout: Duration = .seconds(5)

    /// Closes the pool `run` by `pool`, waiting for it at most ``closeTimeout``.
    ///
    /// postgres-nio's pool returns from `run()` only once every connection task has ended, and a task waiting on a
    /// statement its closed channel dropped (see `ClosedConnectionWatch`) — its own keep-alive query, say — never
    /// ends. Seen as a `work` process that stopped its worker on SIGTERM and then never exited; the sockets close
    /// with the process anyway.
    static func close(_ pool: Task<Void, Never>, logger: Logger) async {
        pool.cancel()
        do {
            try await withDeadline(closeTimeout) { await pool.value }
        } catch is CancellationError {
            logger.warning("the stop's grace ran out before the database pool closed; going on without it")
        } catch {
            logger.warning("the database pool did not close within \(closeTimeout); going on without it")
        }
    }
}
