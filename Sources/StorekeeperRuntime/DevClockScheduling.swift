import Application
import Foundation
import Jobs
import PostgresNIO

/// `storekeeper dev`'s job scheduling: the queue runs jobs by the database's clock, while every rule of `dev` reads
/// the dev clock, which `simulate advance` moves ahead. A job the rules schedule for a dev instant (a grant's end, the
/// next credit window, an answer deadline) is stored at the real instant that is as far from the real now, and an
/// advance brings the waiting jobs forward as far — so they run when the dev clock reaches them, not when the wall
/// clock does.
public struct DevClockScheduling: JobScheduling {
    let queue: PostgresJobQueue
    /// How far the dev clock is ahead of the real time, in seconds.
    let offset: @Sendable () -> TimeInterval

    /// - Parameter offset: the dev clock's lead over the real time (the operator commands measure it once).
    public init(queue: PostgresJobQueue, offset: @escaping @Sendable () -> TimeInterval) {
        self.queue = queue
        self.offset = offset
    }

    public func enqueue(_ job: NewJob, on connection: PostgresConnection) async throws -> Bool {
        try await queue.enqueue(Self.inRealTime(job, lead: offset()), on: connection)
    }

    public func enqueue(_ jobs: [NewJob], on connection: PostgresConnection) async throws -> Int {
        // One reading of the lead for the batch: an advance in between moves none of its jobs apart.
        let lead = offset()
        return try await queue.enqueue(jobs.map { Self.inRealTime($0, lead: lead) }, on: connection)
    }

    /// `job` at the real instant as far from the real now as its instant is from the dev clock's, `lead` ahead.
    private static func inRealTime(_ job: NewJob, lead: TimeInterval) -> NewJob {
        var job = job
        job.runAt = job.runAt.map { $0.addingTimeInterval(-lead) }
        return job
    }
}
