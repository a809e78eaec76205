import PostgresNIO

/// Runs the jobs of one kind.
///
/// A handler whose effects live in PostgreSQL completes the job inside the same transaction with
/// ``JobExecution/complete(on:)``, so effects and completion commit together (effectively once). A handler that
/// returns without doing so has its job completed by the worker afterwards. Throwing records a failed attempt and
/// retries with backoff; throw ``JobFailure/permanent(_:)`` to fail at once.
public protocol JobHandler: Sendable {
    /// The job kind this handler runs.
    var kind: String { get }
    func run(_ execution: JobExecution) async throws
}

/// A failure that should not be retried.
public enum JobFailure: Error, Sendable {
    case permanent(String)
}
