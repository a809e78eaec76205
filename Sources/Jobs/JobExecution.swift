import PostgresNIO
import Synchronization

/// One attempt at running a claimed job, handed to its ``JobHandler``.
public final class JobExecution: Sendable {
    public let job: ClaimedJob
    public let queue: PostgresJobQueue
    private let completedInTransaction = Mutex(false)

    init(job: ClaimedJob, queue: PostgresJobQueue) {
        self.job = job
        self.queue = queue
    }

    /// Completes the job inside the caller's transaction. Throws ``JobQueueError/Code/lostClaim`` if the job was
    /// rescued meanwhile, which must roll the transaction back.
    public func complete(on connection: PostgresConnection) async throws {
        try await queue.complete(job, on: connection)
        completedInTransaction.withLock { $0 = true }
    }

    /// Completes the job inside the caller's transaction through a statement of the caller's own that also calls
    /// `complete_job(id, attempt)` (sql/0020_complete_job.sql) and returns its answer: a use case that ends with a
    /// write of its own saves a round trip. Throws ``JobQueueError/Code/lostClaim`` as ``complete(on:)`` does.
    public func complete(through statement: (_ id: Int64, _ attempt: Int) async throws -> Bool) async throws {
        guard try await statement(job.id, job.attempt) else { throw PostgresJobQueue.lostClaim(job) }
        completedInTransaction.withLock { $0 = true }
    }

    var isCompleted: Bool { completedInTransaction.withLock { $0 } }
}
