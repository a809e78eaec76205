import Foundation
import Logging
import PostgresNIO

/// The job queue on PostgreSQL: one SQL statement per intent. Enqueue and completion take the caller's connection so
/// they can join the caller's transaction (the intake enqueues with the notification it stores; a job completes in
/// the transaction that applies its effects).
///
/// ```swift
/// let queue = PostgresJobQueue(client: client, logger: logger)
/// try await client.withTransaction(logger: logger) { connection in
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
        let rows = try await connection.query(
            """
            WITH inserted AS (
                INSERT INTO jobs (kind, args, priority, run_at, max_attempts, attempt_budget, unique_key, concurrency_key)
                VALUES (\(job.kind), \(job.arguments)::jsonb, \(job.priority), COALESCE(\(job.runAt), now()),
                        \(job.maxAttempts), \(job.maxAttempts), \(job.uniqueKey), \(job.concurrencyKey))
                ON CONFLICT (unique_key) WHERE unique_key IS NOT NULL DO NOTHING
                RETURNING id
            )
            SELECT inserted.id FROM inserted
                CROSS JOIN (SELECT CASE WHEN \(notify) THEN pg_notify(\(Self.wakeUpChannel), '') END) AS wake
            """,
            logger: logger
        )
        return try await rows.first(Int64.self).map { .enqueued(id: $0) } ?? .duplicate
    }

    /// Wakes listening workers now (its own tiny transaction).
    public func notifyWorkers() async throws {
        try await client.query("SELECT pg_notify(\(Self.wakeUpChannel), '')", logger: logger)
    }

    /// Inserts many jobs in one statement (one round trip); jobs whose unique key is taken are skipped. Returns how
    /// many were inserted. `notify` as for a single job.
    @discardableResult
    public func enqueue(_ jobs: [NewJob], on connection: PostgresConnection, notify: Bool = true) async throws -> Int {
        guard !jobs.isEmpty else { return 0 }
        // Arrays cannot carry NULLs through the binding, so absent values travel as '' / -1 and become NULL / now().
        let kinds = jobs.map(\.kind)
        let arguments = jobs.map(\.arguments)
        let priorities = jobs.map { Int32($0.priority) }
        let runAts = jobs.map { $0.runAt?.timeIntervalSince1970 ?? -1 }
        let maxAttempts = jobs.map { Int32($0.maxAttempts) }
        let uniqueKeys = jobs.map { $0.uniqueKey ?? "" }
        let concurrencyKeys = jobs.map { $0.concurrencyKey ?? "" }
        let rows = try await connection.query(
            """
            WITH inserted AS (
                INSERT INTO jobs (kind, args, priority, run_at, max_attempts, attempt_budget, unique_key, concurrency_key)
                SELECT kind, args::jsonb, priority::smallint,
                       CASE WHEN run_at < 0 THEN now() ELSE to_timestamp(run_at) END,
                       max_attempts, max_attempts, NULLIF(unique_key, ''), NULLIF(concurrency_key, '')
                FROM unnest(\(kinds)::text[], \(arguments)::text[], \(priorities)::int4[], \(runAts)::float8[],
                            \(maxAttempts)::int4[], \(uniqueKeys)::text[], \(concurrencyKeys)::text[])
                     AS input(kind, args, priority, run_at, max_attempts, unique_key, concurrency_key)
                ON CONFLICT (unique_key) WHERE unique_key IS NOT NULL DO NOTHING
                RETURNING id
            )
            SELECT count(*) FROM inserted
                CROSS JOIN (SELECT CASE WHEN \(notify) THEN pg_notify(\(Self.wakeUpChannel), '') END) AS wake
            """,
            logger: logger
        )
        return try await rows.first(Int.self) ?? 0
    }

    /// Claims up to `limit` runnable jobs for `workerID` in one round trip. A job whose concurrency key has a
    /// running job, or an earlier runnable one, is skipped, so jobs of one key run one at a time in order.
    public func claim(limit: Int, workerID: UUID) async throws -> [ClaimedJob] {
        let rows = try await client.query(
            """
            WITH picked AS MATERIALIZED (
                SELECT id FROM jobs AS candidate
                WHERE state = 'available' AND run_at <= now()
                  AND (concurrency_key IS NULL OR NOT EXISTS (
                      SELECT 1 FROM jobs AS blocker
                      WHERE blocker.concurrency_key = candidate.concurrency_key
                        AND blocker.state IN ('available', 'running')
                        AND (blocker.state = 'running' OR (blocker.id < candidate.id AND blocker.run_at <= now()))))
                ORDER BY priority, run_at, id
                LIMIT \(limit)
                FOR UPDATE SKIP LOCKED
            )
            UPDATE jobs SET state = 'running', attempt = jobs.attempt + 1, attempted_at = now(), locked_by = \(workerID)
            FROM picked WHERE jobs.id = picked.id
            RETURNING jobs.id, jobs.kind, jobs.attempt, jobs.max_attempts, jobs.args::text
            """,
            logger: logger
        )
        var jobs: [ClaimedJob] = []
        for try await (id, kind, attempt, maxAttempts, arguments) in rows.decode((Int64, String, Int, Int, String).self) {
            jobs.append(ClaimedJob(id: id, kind: kind, attempt: attempt, maxAttempts: maxAttempts, arguments: arguments))
        }
        return jobs
    }

    /// Completes a job — moves it to `job_history` — if it is still running under the claimed attempt. Called
    /// inside the transaction that applied the job's effects, the two commit together.
    /// - Throws: ``JobQueueError/Code/lostClaim`` when the claim is no longer valid.
    public func complete(_ job: ClaimedJob, on connection: PostgresConnection) async throws {
        let rows = try await connection.query(
            """
            WITH finished AS (
                DELETE FROM jobs WHERE id = \(job.id) AND attempt = \(job.attempt) AND state = 'running'
                RETURNING id, kind, attempt, args, errors, unique_key, created_at
            )
            INSERT INTO job_history (id, kind, state, attempt, args, errors, unique_key, created_at)
            SELECT id, kind, 'completed', attempt, args, errors, unique_key, created_at FROM finished
            RETURNING id
            """,
            logger: logger
        )
        for try await _ in rows.decode(Int64.self) { return }
        throw JobQueueError(.lostClaim, "job \(job.id) attempt \(job.attempt) is no longer running")
    }

    /// Completes many jobs in one statement, each only if still running under its claimed attempt. Returns how many
    /// were completed; the others had lost their claim.
    @discardableResult
    public func complete(_ jobs: [ClaimedJob]) async throws -> Int {
        guard !jobs.isEmpty else { return 0 }
        let ids = jobs.map(\.id)
        let attempts = jobs.map { Int32($0.attempt) }
        let rows = try await client.query(
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
        let rows = try await client.query(
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
        let rows = try await client.query(
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
        let rows = try await client.query("SELECT min(run_at) FROM jobs WHERE state = 'available'", logger: logger)
        return try await rows.first(Date?.self) ?? nil
    }

    /// Records a failed attempt: the job runs again at `retryAt`, or becomes `failed` when its attempts are used up
    /// (or `retryAt` is nil: a permanent error). Fenced like ``complete(_:on:)``; returns the new state, or nil when
    /// the claim was lost.
    @discardableResult
    public func fail(_ job: ClaimedJob, error: String, retryAt: Date?) async throws -> String? {
        let message = String(error.prefix(2000))
        let rows = try await client.query(
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
        return try await rows.first(String.self)
    }
}
