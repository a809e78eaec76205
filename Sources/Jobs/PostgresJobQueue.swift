import Foundation
import Logging
import PostgresNIO
import StatementFencing

/// The job queue on PostgreSQL: one SQL statement per intent. Enqueue and completion take the caller's connection so
/// they can join the caller's transaction (the intake enqueues with the notification it stores; a job completes in
/// the transaction that applies its effects).
///
/// ```swift
/// let queue = PostgresJobQueue(client: client, logger: logger)
/// try await client.withFencedTransaction(logger: logger) { connection in
///     try await store.insert(notification, on: connection)
///     try await queue.enqueue(NewJob(kind: "apply-notification", arguments: arguments), on: connection)
/// }
/// ```
public struct PostgresJobQueue: Sendable {
    /// The LISTEN/NOTIFY channel that hints workers at new runnable jobs.
    public static let wakeUpChannel = "storekeeper_jobs"

    public let client: PostgresClient
    public let logger: Logger

    public init(client: PostgresClient, logger: Logger) {
        self.client = client
        self.logger = logger
    }

    /// Inserts a job; a job whose unique key is taken is not inserted. Notifies listening workers on commit, unless
    /// `notify` is false — then call ``WorkerNotifier/signal()`` after the commit: a NOTIFY in every transaction
    /// serializes the commits of all of them (PostgreSQL takes a database-wide lock to queue notifications).
    @discardableResult
    public func enqueue(_ job: NewJob, on connection: PostgresConnection, notify: Bool = true) async throws -> EnqueueResult {
        guard let id = try await connection.run(EnqueueJob(job: job, notify: notify), logger: logger).first else { return .duplicate }
        return .enqueued(id: id)
    }

    /// Wakes listening workers now (its own tiny transaction).
    public func notifyWorkers() async throws {
        _ = try await client.withConnection { try await $0.run(NotifyWorkers(), logger: logger) }
    }

    /// Inserts many jobs in one statement (one round trip); jobs whose unique key is taken are skipped. Returns how
    /// many were inserted. `notify` as for a single job.
    @discardableResult
    public func enqueue(_ jobs: [NewJob], on connection: PostgresConnection, notify: Bool = true) async throws -> Int {
        guard !jobs.isEmpty else { return 0 }
        return try await connection.run(EnqueueJobs(jobs: jobs, notify: notify), logger: logger).first ?? 0
    }

    /// Claims up to `limit` runnable jobs for `workerID` in one round trip. A job whose concurrency key has a
    /// running job, or an earlier runnable one, is skipped, so jobs of one key run one at a time in order.
    public func claim(limit: Int, workerID: UUID) async throws -> [ClaimedJob] {
        try await client.withConnection { connection in
            try await connection.run(ClaimJobs(limit: limit, workerID: workerID), logger: logger)
        }
    }

    /// Completes a job — moves it to `job_history` — if it is still running under the claimed attempt. Called
    /// inside the transaction that applied the job's effects, the two commit together.
    /// - Throws: ``JobQueueError/Code/lostClaim`` when the claim is no longer valid.
    public func complete(_ job: ClaimedJob, on connection: PostgresConnection) async throws {
        guard try await connection.run(CompleteJob(job: job), logger: logger).first != true else { return }
        throw Self.lostClaim(job)
    }

    static func lostClaim(_ job: ClaimedJob) -> JobQueueError {
        JobQueueError(.lostClaim, "job \(job.id) attempt \(job.attempt) is no longer running")
    }

    /// Completes many jobs in one statement, each only if still running under its claimed attempt. Returns how many
    /// were completed; the others had lost their claim.
    @discardableResult
    public func complete(_ jobs: [ClaimedJob]) async throws -> Int {
        guard !jobs.isEmpty else { return 0 }
        let ids = jobs.map(\.id)
        let attempts = jobs.map { Int32($0.attempt) }
        let rows = try await client.fencedQuery(
            """
            WITH finished AS (
                DELETE FROM jobs USING unnest(\(ids)::int8[], \(attempts)::int4[]) AS done(id, attempt)
                WHERE jobs.id = done.id AND jobs.attempt = done.attempt AND jobs.state = 'running'
                RETURNING jobs.id, jobs.kind, jobs.attempt, jobs.args, jobs.errors, jobs.unique_key, jobs.created_at
            ), archived AS (
                INSERT INTO job_history (id, kind, state, attempt, args, errors, unique_key, created_at)
                SELECT id, kind, 'completed', attempt, args, errors, unique_key, created_at FROM finished
                RETURNING 1
            )
            SELECT count(*) FROM archived
            """,
            logger: logger
        )
        return try await rows.first(Int.self) ?? 0
    }

    /// Puts a running job back to wait until `runAt` without using up an attempt (fenced).
    @discardableResult
    public func snooze(_ job: ClaimedJob, until runAt: Date) async throws -> Bool {
        let rows = try await client.fencedQuery(
            """
            UPDATE jobs SET state = 'available', run_at = \(runAt), attempt = attempt - 1, locked_by = NULL
            WHERE id = \(job.id) AND attempt = \(job.attempt) AND state = 'running'
            RETURNING id
            """,
            logger: logger
        )
        return try await rows.first(Int64.self) != nil
    }

    /// Ends a running job that can never succeed: moved to `job_history` as `discarded` with its error (fenced).
    @discardableResult
    public func discard(_ job: ClaimedJob, reason: String) async throws -> Bool {
        let message = String(reason.prefix(2000))
        let rows = try await client.fencedQuery(
            """
            WITH finished AS (
                DELETE FROM jobs WHERE id = \(job.id) AND attempt = \(job.attempt) AND state = 'running'
                RETURNING id, kind, attempt, args, errors, unique_key, created_at
            )
            INSERT INTO job_history (id, kind, state, attempt, args, errors, unique_key, created_at)
            SELECT id, kind, 'discarded', attempt, args,
                   errors || jsonb_build_array(jsonb_build_object('attempt', attempt, 'at', now(), 'error', \(message)::text)),
                   unique_key, created_at
            FROM finished
            RETURNING id
            """,
            logger: logger
        )
        return try await rows.first(Int64.self) != nil
    }

    /// When the earliest waiting job becomes due (`nil` when none waits).
    public func nextRunAt() async throws -> Date? {
        try await client.withConnection { try await $0.run(NextRunAt(), logger: logger).first ?? nil }
    }

    /// Records a failed attempt: the job runs again at `retryAt`, or becomes `failed` when its attempts are used up
    /// (or `retryAt` is nil: a permanent error). Fenced like ``complete(_:on:)``; returns the new state, or nil when
    /// the claim was lost.
    @discardableResult
    public func fail(_ job: ClaimedJob, error: String, retryAt: Date?) async throws -> JobState? {
        let message = String(error.prefix(2000))
        let rows = try await client.fencedQuery(
            """
            UPDATE jobs SET
                state = CASE WHEN attempt >= max_attempts OR \(retryAt)::timestamptz IS NULL
                             THEN 'failed' ELSE 'available' END,
                run_at = COALESCE(\(retryAt), run_at),
                locked_by = NULL,
                errors = errors || jsonb_build_array(jsonb_build_object(
                    'attempt', attempt, 'at', now(), 'error', \(message)::text))
            WHERE id = \(job.id) AND attempt = \(job.attempt) AND state = 'running'
            RETURNING state
            """,
            logger: logger
        )
        return try await rows.first(String.self).flatMap(JobState.init(rawValue:))
    }
}
