import Logging
import PostgresNIO

extension PostgresClient {
    /// postgres-nio's `withTransaction`, fenced as ``PostgresConnection/run(_:logger:)`` fences a statement (see
    /// ``ClosedConnectionWatch``): should the connection close under its `BEGIN`, its `COMMIT` or any statement of
    /// `body`, the call fails with ``ConnectionClosedError`` within about two seconds instead of waiting forever.
    /// postgres-nio sends `BEGIN` and `COMMIT` as plain queries, which are not fenced; one written to a connection the
    /// database had just dropped never answered, and a commit group's loop (spends, holds) waited for it for good: every
    /// later spend of that process failed after its deadline until the process restarted (helper-143, a PostgreSQL
    /// restart under load). Errors are postgres-nio's (`PostgresTransactionError`) otherwise.
    public func withFencedTransaction<Result: Sendable>(
        logger: Logger, _ body: @escaping @Sendable (PostgresConnection) async throws -> Result
    ) async throws -> Result {
        try await withFencedTransaction(logger: logger, watch: .shared, body)
    }

    func withFencedTransaction<Result: Sendable>(
        logger: Logger, watch: ClosedConnectionWatch, _ body: @escaping @Sendable (PostgresConnection) async throws -> Result
    ) async throws -> Result {
        try await withConnection { connection in
            try await watch.fence(connection) {
                try await connection.withTransaction(logger: logger) { try await body($0) }
            }
        }
    }
}
