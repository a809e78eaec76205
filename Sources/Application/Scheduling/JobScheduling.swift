import Jobs
import Persistence
import PostgresNIO

/// Where the use cases enqueue follow-up work, inside their own transaction: the queue itself, or under `dev` the dev
/// clock's scheduling, which moves a job's instant into real time.
public protocol JobScheduling: Sendable {
    /// Enqueues `job` on `connection`, unless a live job has its unique key; returns whether it was enqueued.
    @discardableResult
    func enqueue(_ job: NewJob, on connection: PostgresConnection) async throws -> Bool
}

extension PostgresJobQueue: JobScheduling {
    public func enqueue(_ job: NewJob, on connection: PostgresConnection) async throws -> Bool {
        try await enqueue(job, on: connection, notify: true) != .duplicate
    }
}
