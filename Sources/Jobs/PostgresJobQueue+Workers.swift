import Foundation
import PostgresNIO

extension PostgresJobQueue {
    /// Registers (or re-registers) a worker process and refreshes its heartbeat.
    public func heartbeat(workerID: UUID, host: String) async throws {
        try await client.fencedQuery(
            """
            INSERT INTO job_workers (id, host) VALUES (\(workerID), \(host))
            ON CONFLICT (id) DO UPDATE SET heartbeat_at = now()
            """,
            logger: logger
        )
    }

    /// Removes a worker that is shutting down after its jobs finished.
    public func deregister(workerID: UUID) async throws {
        try await client.fencedQuery("DELETE FROM job_workers WHERE id = \(workerID)", logger: logger)
    }

    /// Makes the jobs `workerID` still runs runnable again at once, recording the interrupted attempt (as a rescue
    /// does; out of attempts they are `failed`): a worker stopping with jobs unfinished after its grace. Returns how
    /// many it released.
    @discardableResult
    public func releaseRunningJobs(of workerID: UUID) async throws -> Int {
        let rows = try await client.fencedQuery(
            """
            UPDATE jobs SET
                state = CASE WHEN attempt >= max_attempts THEN 'failed' ELSE 'available' END,
                run_at = now(),
                locked_by = NULL,
                errors = errors || jsonb_build_array(jsonb_build_object(
                    'attempt', attempt, 'at', now(), 'error', 'worker stopped before the job finished; released at shutdown'))
            WHERE state = 'running' AND locked_by = \(workerID)
            RETURNING id
            """, logger: logger)
        var released = 0
        for try await _ in rows.decode(Int64.self) { released += 1 }
        return released
    }

    /// Makes the running jobs of workers whose heartbeat is older than `staleAfter` (or that are gone) runnable
    /// again, recording the lost attempt; jobs out of attempts become `failed`. Forgets stale workers. Returns how
    /// many jobs were rescued.
    @discardableResult
    public func rescueAbandonedJobs(staleAfter: Duration) async throws -> Int {
        let seconds = Double(staleAfter.components.seconds)
        let rows = try await client.fencedQuery(
            """
            WITH live AS (
                SELECT id FROM job_workers WHERE heartbeat_at > now() - make_interval(secs => \(seconds))
            ), rescued AS (
                UPDATE jobs SET
                    state = CASE WHEN attempt >= max_attempts THEN 'failed' ELSE 'available' END,
                    run_at = now(),
                    locked_by = NULL,
                    errors = errors || jsonb_build_array(jsonb_build_object(
                        'attempt', attempt, 'at', now(), 'error', 'worker stopped heartbeating; job rescued'))
                WHERE state = 'running' AND (locked_by IS NULL OR locked_by NOT IN (SELECT id FROM live))
                RETURNING id
            ), forgotten AS (
                DELETE FROM job_workers WHERE id NOT IN (SELECT id FROM live)
            )
            SELECT count(*) FROM rescued
            """,
            logger: logger
        )
        return try await rows.first(Int.self) ?? 0
    }

    /// Makes runnable again the jobs the database says `workerID` runs but it does not know of — a claim whose answer
    /// was lost with the connection, an outcome that could not be written while the database was away — once they
    /// have been claimed for longer than `grace`. Returns how many were released.
    @discardableResult
    public func releaseUnknownJobs(of workerID: UUID, keeping known: Set<Int64>, grace: Duration) async throws -> Int {
        let seconds = Double(grace.components.seconds)
        let rows = try await client.fencedQuery(
            """
            WITH released AS (
                UPDATE jobs SET
                    state = CASE WHEN attempt >= max_attempts THEN 'failed' ELSE 'available' END,
                    run_at = now(),
                    locked_by = NULL,
                    errors = errors || jsonb_build_array(jsonb_build_object(
                        'attempt', attempt, 'at', now(), 'error', 'outcome lost (database unavailable); released'))
                WHERE state = 'running' AND locked_by = \(workerID) AND NOT (id = ANY(\(Array(known))::int8[]))
                    AND attempted_at < now() - make_interval(secs => \(seconds))
                RETURNING id
            )
            SELECT count(*) FROM released
            """,
            logger: logger
        )
        return try await rows.first(Int.self) ?? 0
    }
}
