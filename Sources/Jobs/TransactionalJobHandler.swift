import PostgresNIO

/// A handler whose jobs do all their work in one database transaction, which the worker may share between several
/// jobs of the kind: a worker runs the jobs of one claim in one transaction — one BEGIN, one COMMIT and one commit
/// flush for all of them (a claim takes several jobs when several are due, most of all in a backlog). Each job still completes in it (``JobExecution/complete(on:)`` or
/// ``JobExecution/complete(_:through:)``, for several in one statement), so effects and completions commit together. When any of them throws, the
/// transaction rolls back — no job of it has an effect — and each job runs again alone, in its own transaction
/// (``JobHandler/run(_:)``), where its outcome is its own.
///
/// The jobs of one claim have distinct concurrency keys (the claim takes at most one job a key), so a shared
/// transaction never holds two jobs of one key.
public protocol TransactionalJobHandler: JobHandler {
    /// At most this many jobs share a transaction.
    var jobsPerTransaction: Int { get }
    /// Runs one job in the caller's transaction, completing it there.
    func run(_ execution: JobExecution, on connection: PostgresConnection) async throws
    /// Runs the jobs of a shared transaction in order, completing each there. By default one after another through
    /// ``run(_:on:)-(JobExecution,_)``; a handler that reads for all of them in one round trip overrides it.
    func run(_ executions: [JobExecution], on connection: PostgresConnection) async throws
}

extension TransactionalJobHandler {
    public func run(_ executions: [JobExecution], on connection: PostgresConnection) async throws {
        for execution in executions { try await run(execution, on: connection) }
    }
}
