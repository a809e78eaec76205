import Foundation
import PostgresNIO

/// Runs the jobs of one kind.
///
/// A handler whose effects live in PostgreSQL completes the job inside the same transaction with
/// ``JobExecution/complete(on:)``, so effects and completion commit together (effectively once). A handler that
/// returns without doing so has its job completed by the worker afterwards (batched). Throwing records a failed
/// attempt and retries with backoff; throw a ``JobFailure`` to snooze or discard instead.
public protocol JobHandler: Sendable {
    /// The job kind this handler runs.
    var kind: String { get }
    /// How long one attempt may run before it is cancelled and counted as failed.
    var timeout: Duration { get }
    /// Whether its jobs may change what an account's status says (where a process also serves, its status cache is
    /// kept from storing while they run).
    var changesAccountStatus: Bool { get }
    func run(_ execution: JobExecution) async throws
}

extension JobHandler {
    public var timeout: Duration { .seconds(300) }
    public var changesAccountStatus: Bool { true }
}

/// Outcomes other than success or a retryable failure.
public enum JobFailure: Error, Sendable {
    /// The job can never succeed: it is moved to history as `discarded` with this reason, not retried.
    case discard(String)
    /// Not now: run again at the given instant without using up an attempt.
    case snooze(until: Date)
}
