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
            return try await watch.fenceInOwnTask(connection) {
                try await connection.withTransaction(logger: logger) { try await body($0) }
            }
        }
    }

    /// postgres-nio's `withConnection`, fenced as ``withFencedTransaction(logger:onConnectionLoop:_:)`` fences a
    /// transaction: should the connection close under a statement of `body` — a plain `query`, which postgres-nio
    /// can leave unanswered for good — the call fails with ``ConnectionClosedError`` within about two seconds and the
    /// lease ends, instead of the connection staying leased to a wait that never ends (after enough database
    /// restarts, the whole pool). The body runs in a task of its own on the global executor; the caller's
    /// cancellation is passed on to it.
    public func withFencedConnection<Result: Sendable>(
        _ body: @escaping @Sendable (PostgresConnection) async throws -> Result
    ) async throws -> Result {
        try await withFencedConnection(watch: .shared, body)
    }

    func withFencedConnection<Result: Sendable>(
        watch: ClosedConnectionWatch, _ body: @escaping @Sendable (PostgresConnection) async throws -> Result
    ) async throws -> Result {
        try await withConnection { connection in try await watch.fenceInOwnTask(connection) { try await body(connection) } }
    }

    /// postgres-nio's `query`, fenced: its rows read in full under ``ClosedConnectionWatch``'s fence (a plain query
    /// written to a connection the database had just dropped is never answered). For the statements that return a
    /// bounded number of rows (an operator's page, a queue's figures); a hot path's statement is prepared and run by
    /// ``PostgresConnection/run(_:logger:)``.
    @discardableResult
    public func fencedQuery(_ query: PostgresQuery, logger: Logger = FencedRows.silent) async throws -> FencedRows {
        try await withConnection { connection in
            try await ClosedConnectionWatch.shared.fence(connection) {
                var rows: [PostgresRow] = []
                for try await row in try await connection.query(query, logger: logger) { rows.append(row) }
                return FencedRows(rows: rows)
            }
        }
    }
}

/// The rows of a ``PostgresClient/fencedQuery(_:logger:)``, read in full: decoded as postgres-nio's own row sequence
/// is (`for try await (a, b) in rows.decode((A, B).self)`).
public struct FencedRows: AsyncSequence, Sendable {
    public typealias Element = PostgresRow
    public let rows: [PostgresRow]

    /// The logger of a query whose caller has none: postgres-nio logs nothing a caller needs at its level.
    public static let silent = Logger(label: "storekeeper.fenced-query", factory: { _ in SwiftLogNoOpLogHandler() })

    public struct AsyncIterator: AsyncIteratorProtocol {
        var rows: IndexingIterator<[PostgresRow]>
        public mutating func next() async throws -> PostgresRow? { rows.next() }
    }

    public func makeAsyncIterator() -> AsyncIterator { AsyncIterator(rows: rows.makeIterator()) }
}

extension ClosedConnectionWatch {
    /// Runs `operation` in a task of its own, on the global executor, whose caller's cancellation (a job's deadline)
    /// is passed on to it — the fence's own task would not reach it — so what the body awaits (an HTTP call inside a
    /// transaction, a sleep) is cancelled as it was unfenced; and it is cancelled when the fence gives up on a closed
    /// connection, so no call outside the database goes on for a caller told it failed (statements ignore
    /// cancellation: one lost on the dead connection keeps its task). Not on the connection's event loop, where the
    /// fence runs single statements: bodies that called an actor there (Stripe's rate limiter, Google's token cache)
    /// crashed the process with a corrupted heap, reproducibly in the Stripe and Play test suites.
    func fenceInOwnTask<Result: Sendable>(
        _ connection: PostgresConnection, _ operation: @escaping @Sendable () async throws -> Result
    ) async throws -> Result {
        let task = Task { try await operation() }
        defer { task.cancel() }
        return try await withTaskCancellationHandler {
            try await fence(connection) { try await task.value }
        } onCancel: {
            task.cancel()
        }
    }
}
