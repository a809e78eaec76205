import Jobs
import Persistence
import PostgresNIO

/// Where the use cases enqueue follow-up work, inside their own transaction: the queue itself, or under `dev` the dev
/// clock's scheduling, which moves a job's instant into real time.
public protocol JobScheduling: Sendable {
    /// Enqueues `job` on `connection`, unless a live job has its unique key; returns whether it was enqueued.
    @discardableResult
    func enqueue(_ job: NewJob, on connection: PostgresConnection) async throws -> Bool

    /// Enqueues `jobs` on `connection` in one statement, skipping those whose unique key a live job has; returns how
    /// many were enqueued.
    @discardableResult
    func enqueue(_ jobs: [NewJob], on connection: PostgresConnection) async throws -> Int
}

extension PostgresJobQueue: JobScheduling {
    public func enqueue(_ job: NewJob, on connection: PostgresConnection) async throws -> Bool {
        try await enqueue(job, on: connection, notify: true) != .duplicate
    }

    public func enqueue(_ jobs: [NewJob], on connection: PostgresConnection) async throws -> Int {
        try await enqueue(jobs, on: connection, notify: true)
    }
}
