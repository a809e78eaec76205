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
    /// - Parameter onConnectionLoop: run the body on the connection's own event loop, inside the fence's task, as
    ///   the spends' and holds' commit groups do: their bodies are statements only, and each round trip then stays on
    ///   that thread; the body does not see its caller's cancellation (a group's loop is not cancelled). A body in a
    ///   task of its own with the cancellation passed on cost the spends about a fifth of their rate (0.79–1.08× TPC-B
    ///   against 1.12–1.30×, docs/capacity.md, "Every transaction fenced"). Other bodies must not run there (below).
    public func withFencedTransaction<Result: Sendable>(
        logger: Logger, onConnectionLoop: Bool = false, _ body: @escaping @Sendable (PostgresConnection) async throws -> Result
    ) async throws -> Result {
        try await withFencedTransaction(logger: logger, onConnectionLoop: onConnectionLoop, watch: .shared, body)
    }

    func withFencedTransaction<Result: Sendable>(
        logger: Logger, onConnectionLoop: Bool = false, watch: ClosedConnectionWatch,
        _ body: @escaping @Sendable (PostgresConnection) async throws -> Result
    ) async throws -> Result {
        try await withConnection { connection in
            if onConnectionLoop {
                return try await watch.fence(connection) {
                    try await connection.withTransaction(logger: logger) { try await body($0) }
                }
            }
            // The body runs in a task of its own, on the global executor, whose caller's cancellation (a job's
            // deadline) is passed on to it — the fence's own task would not reach it — so what the body awaits (an
            // HTTP call inside a transaction, a sleep) is cancelled as it was unfenced; and it is cancelled when the
            // fence gives up on a closed connection, so no call outside the database goes on for a caller told it
            // failed (statements ignore cancellation: one lost on the dead connection keeps its task). Not on the
            // connection's event loop, where the fence runs single statements: bodies that called an
            // actor there (Stripe's rate limiter, Google's token cache) crashed the process with a corrupted heap,
            // reproducibly in the Stripe and Play test suites.
            let transaction = Task {
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
