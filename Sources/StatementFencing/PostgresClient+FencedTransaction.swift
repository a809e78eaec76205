import Logging
import PostgresNIO

extension PostgresClient {
    /// postgres-nio's `withTransaction`, fenced as ``PostgresConnection/run(_:logger:)`` fences a statement (see
    /// ``ClosedConnectionWatch``): should the connection close under its `BEGIN`, its `COMMIT` or any statement of
    /// `body`, the call fails with ``ConnectionClosedError`` within about two seconds instead of waiting forever.
    /// postgres-nio sends `BEGIN` and `COMMIT` as plain queries, which are not fenced; one written to a connection the
    /// database had just dropped never answered, and a commit group's loop (spends, holds) waited for it for good: every
    /// later spend of that process failed after its deadline until the process restarted (helper-143, a PostgreSQL
    /// restart under load). Every transaction of Storekeeper runs here. Errors are postgres-nio's
    /// (`PostgresTransactionError`) otherwise, and a cancelled caller cancels the body's task.
    ///
    /// - Parameter executor: where the body runs. A commit group's bodies, statements only, pass the database
    ///   connections' own event loop (`StorekeeperComponents.databaseExecutor`), where they always ran: on the global
    ///   executor every round trip hops to another thread and back, and spends ran about a third slower
    ///   (docs/capacity.md, "Every transaction fenced"). `nil`, the global executor, for every other body (see below).
    public func withFencedTransaction<Result: Sendable>(
        logger: Logger, executor: (any TaskExecutor)? = nil, _ body: @escaping @Sendable (PostgresConnection) async throws -> Result
    ) async throws -> Result {
        try await withFencedTransaction(logger: logger, executor: executor, watch: .shared, body)
    }

    func withFencedTransaction<Result: Sendable>(
        logger: Logger, executor: (any TaskExecutor)? = nil, watch: ClosedConnectionWatch,
        _ body: @escaping @Sendable (PostgresConnection) async throws -> Result
    ) async throws -> Result {
        try await withConnection { connection in
            // The body runs in a task of its own, on the global executor unless told, whose caller's cancellation (a job's
            // deadline) is passed on to it — the fence's own task would not reach it — so what the body awaits (an
            // HTTP call inside a transaction, a sleep) is cancelled as it was unfenced; and it is cancelled when the
            // fence gives up on a closed connection, so no call outside the database goes on for a caller told it
            // failed (statements ignore cancellation: one lost on the dead connection keeps its task). Other bodies are
            // not put on the connection's event loop, where the fence runs single statements: bodies that called an
            // actor there (Stripe's rate limiter, Google's token cache) crashed the process with a corrupted heap,
            // reproducibly in the Stripe and Play test suites.
            let transaction = Task(executorPreference: executor) {
                try await connection.withTransaction(logger: logger) { try await body($0) }
            }
            defer { transaction.cancel() }
            return try await withTaskCancellationHandler {
                try await watch.fence(connection) { try await transaction.value }
            } onCancel: {
                transaction.cancel()
            }
        }
    }
}
