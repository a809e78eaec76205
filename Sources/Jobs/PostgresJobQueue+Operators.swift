import Foundation
import PostgresNIO

extension PostgresJobQueue {
    /// Counts by kind and state, and the age of the oldest runnable job.
    public func statistics() async throws -> QueueStatistics {
        var counts: [QueueStatistics.Count] = []
        let rows = try await client.fencedQuery(
            "SELECT kind, state, count(*) FROM jobs GROUP BY kind, state ORDER BY kind, state", logger: logger)
        for try await (kind, state, count) in rows.decode((String, String, Int).self) {
            counts.append(.init(kind: kind, state: try Self.state(state), count: count))
        }
        var oldest: Double?
        let ageRows = try await client.fencedQuery(
            "SELECT EXTRACT(EPOCH FROM now() - min(run_at))::float8 FROM jobs WHERE state = 'available' AND run_at <= now()",
            logger: logger)
        for try await age in ageRows.decode(Double?.self) { oldest = age }
        var finished: [QueueStatistics.Count] = []
        let historyRows = try await client.fencedQuery(
            """
            SELECT kind, state, count(*) FROM job_history WHERE finished_at > now() - interval '1 hour'
            GROUP BY kind, state ORDER BY kind, state
            """,
            logger: logger)
        for try await (kind, state, count) in historyRows.decode((String, String, Int).self) {
            finished.append(.init(kind: kind, state: try Self.state(state), count: count))
        }
        return QueueStatistics(counts: counts, oldestRunnableAgeSeconds: oldest, finishedLastHour: finished)
    }

    /// Jobs in `state` (any live state when nil; `completed`/`discarded` read the history), newest first.
    public func jobs(state: JobState? = nil, kind: String? = nil, limit: Int = 50) async throws -> [JobRecord] {
        let state = state?.rawValue
        if let finished = state.flatMap(JobState.init(rawValue:)), finished.isFinished {
            let rows = try await client.fencedQuery(
                """
                SELECT \(unescaped: Self.historyColumns) FROM job_history
                WHERE state = \(state) AND (\(kind)::text IS NULL OR kind = \(kind)) ORDER BY id DESC LIMIT \(limit)
                """,
                logger: logger)
            return try await Self.records(rows)
        }
        let rows = try await client.fencedQuery(
            """
            SELECT \(unescaped: Self.liveColumns) FROM jobs
            WHERE (\(state)::text IS NULL OR state = \(state)) AND (\(kind)::text IS NULL OR kind = \(kind))
            ORDER BY id DESC LIMIT \(limit)
            """,
            logger: logger)
        return try await Self.records(rows)
    }

    /// One job, live or finished.
    public func job(id: Int64) async throws -> JobRecord? {
        let live = try await Self.records(
            try await client.fencedQuery("SELECT \(unescaped: Self.liveColumns) FROM jobs WHERE id = \(id)", logger: logger))
        if let record = live.first { return record }
        return try await Self.records(
            try await client.fencedQuery("SELECT \(unescaped: Self.historyColumns) FROM job_history WHERE id = \(id)", logger: logger)
        ).first
    }

    /// Makes failed or cancelled jobs runnable now with a fresh attempt budget. The attempt counter keeps growing
    /// (it is the fencing token); `max_attempts` grows by the job's budget instead. Returns the ids.
    public func requeue(ids: [Int64]) async throws -> [Int64] {
        try await collectIDs(
            client.fencedQuery(
                """
                UPDATE jobs SET state = 'available', run_at = now(), locked_by = NULL, max_attempts = attempt + attempt_budget
                WHERE id = ANY(\(ids)::int8[]) AND state IN ('failed', 'cancelled')
                RETURNING id
                """,
                logger: logger))
    }

    /// Moves every job waiting for a later time `seconds` earlier (never before now): `storekeeper dev`'s clock moved on.
    public func bringForward(by seconds: TimeInterval) async throws {
        try await client.fencedQuery(
            """
            UPDATE jobs SET run_at = greatest(now(), run_at - make_interval(secs => \(seconds)))
            WHERE state = 'available' AND run_at > now()
            """,
            logger: logger)
    }

    /// Requeues (or, with `dryRun`, lists) the jobs in `state` (`failed` or `cancelled`) matching the filters.
    public func requeue(state: JobState, kind: String?, since: Date?, dryRun: Bool) async throws -> [Int64] {
        let state = state.rawValue
        if dryRun {
            return try await collectIDs(
                client.fencedQuery(
                    """
                    SELECT id FROM jobs WHERE state = \(state) AND (\(kind)::text IS NULL OR kind = \(kind))
                      AND (\(since)::timestamptz IS NULL OR created_at >= \(since)) ORDER BY id
                    """,
                    logger: logger))
        }
        return try await collectIDs(
            client.fencedQuery(
                """
                UPDATE jobs SET state = 'available', run_at = now(), locked_by = NULL, max_attempts = attempt + attempt_budget
                WHERE state = \(state) AND state IN ('failed', 'cancelled') AND (\(kind)::text IS NULL OR kind = \(kind))
                  AND (\(since)::timestamptz IS NULL OR created_at >= \(since))
                RETURNING id
                """,
                logger: logger))
    }

    /// Cancels jobs that have not started (`available`); running and finished jobs are left alone. Returns the ids
    /// cancelled.
    public func cancel(ids: [Int64]) async throws -> [Int64] {
        try await collectIDs(
            client.fencedQuery(
                """
                UPDATE jobs SET state = 'cancelled', locked_by = NULL
                WHERE id = ANY(\(ids)::int8[]) AND state = 'available'
                RETURNING id
                """,
                logger: logger))
    }

    private func collectIDs(_ rows: some AsyncSequence<PostgresRow, any Error>) async throws -> [Int64] {
        var ids: [Int64] = []
        for try await id in rows.decode(Int64.self) { ids.append(id) }
        return ids.sorted()
    }

    private static let liveColumns = """
        id, kind, state, attempt, max_attempts, priority::int4, run_at, created_at, attempted_at, NULL::timestamptz, \
        unique_key, concurrency_key, locked_by, args::text, errors::text
        """
    private static let historyColumns = """
        id, kind, state, attempt, NULL::int4, NULL::int4, NULL::timestamptz, created_at, NULL::timestamptz, finished_at, \
        unique_key, NULL::text, NULL::uuid, args::text, errors::text
        """

    /// A `state` column's value: only the queue writes it.
    static func state(_ text: String) throws -> JobState {
        guard let state = JobState(rawValue: text) else { throw JobQueueError(.corruptJob, "unknown job state \(text)") }
        return state
    }

    private static func records(_ rows: some AsyncSequence<PostgresRow, any Error>) async throws -> [JobRecord] {
        var records: [JobRecord] = []
        let columns = (Int64, String, String, Int, Int?, Int?, Date?, Date, Date?, Date?, String?, String?, UUID?, String, String).self
        for try await (
            id, kind, state, attempt, maxAttempts, priority, runAt, createdAt, attemptedAt, finishedAt, uniqueKey,
            concurrencyKey, lockedBy, arguments, errors
        ) in rows.decode(columns) {
            records.append(
                JobRecord(
                    id: id, kind: kind, state: try Self.state(state), attempt: attempt, maxAttempts: maxAttempts, priority: priority,
                    runAt: runAt, createdAt: createdAt, attemptedAt: attemptedAt, finishedAt: finishedAt,
                    uniqueKey: uniqueKey, concurrencyKey: concurrencyKey, lockedBy: lockedBy, arguments: arguments,
                    errors: (try? JSONDecoder().decode([JobRecord.AttemptError].self, from: Data(errors.utf8))) ?? []))
        }
        return records
    }
}
