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

    /// Completes `executions` inside the caller's transaction through one statement of the caller's own that also
    /// calls `complete_job(id, attempt)` (sql/0020_complete_job.sql) for each of `jobs` and returns their answers in
    /// that order: a use case that ends with a write of its own saves a round trip, and the jobs of a shared
    /// transaction one each. Throws ``JobQueueError/Code/lostClaim`` for the first job no longer running under its
    /// claimed attempt, as ``complete(on:)`` does, which must roll the transaction back.
    public static func complete(
        _ executions: [JobExecution], through statement: (_ jobs: [(id: Int64, attempt: Int)]) async throws -> [Bool]
    ) async throws {
        let answers = try await statement(executions.map { ($0.job.id, $0.job.attempt) })
        for (index, execution) in executions.enumerated() where index >= answers.count || !answers[index] {
            throw PostgresJobQueue.lostClaim(execution.job)
        }
        for execution in executions { execution.completedInTransaction.withLock { $0 = true } }
    }

    var isCompleted: Bool { completedInTransaction.withLock { $0 } }
}
