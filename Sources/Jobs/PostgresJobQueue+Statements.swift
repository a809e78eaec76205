import Foundation
import PostgresNIO

// The statements every job goes through, prepared: PostgreSQL parses and plans them once per connection.
extension PostgresJobQueue {
    /// Inserts one job unless its unique key is taken, returning its id; wakes listening workers on commit when `notify`.
    struct EnqueueJob: PostgresPreparedStatement {
        static let sql = """
            WITH inserted AS (
                INSERT INTO jobs (kind, args, priority, run_at, max_attempts, attempt_budget, unique_key, concurrency_key)
                VALUES ($1, $2::jsonb, $3, COALESCE($4, now()), $5, $5, $6, $7)
                ON CONFLICT (unique_key) WHERE unique_key IS NOT NULL DO NOTHING
                RETURNING id
            )
            SELECT inserted.id FROM inserted
                CROSS JOIN (SELECT CASE WHEN $8 THEN pg_notify('\(PostgresJobQueue.wakeUpChannel)', '') END) AS wake
            """
        static let bindingDataTypes: [PostgresDataType] = [.text, .text, .int2, .timestamptz, .int8, .text, .text, .bool]
        var job: NewJob
        var notify: Bool

        func makeBindings() -> PostgresBindings {
            var bindings = PostgresBindings(capacity: 8)
            bindings.append(job.kind)
            bindings.append(job.arguments)
            bindings.append(job.priority)
            bindings.append(job.runAt)
            bindings.append(job.maxAttempts)
            bindings.append(job.uniqueKey)
            bindings.append(job.concurrencyKey)
            bindings.append(notify)
            return bindings
        }

        func decodeRow(_ row: PostgresRow) throws -> Int64 { try row.decode(Int64.self) }
    }

    /// Inserts many jobs, skipping those whose unique key is taken, and counts the inserted.
    struct EnqueueJobs: PostgresPreparedStatement {
        static let sql = """
            WITH inserted AS (\(JobBatchInsert.sql(firstParameter: 1)) RETURNING id)
            SELECT count(*) FROM inserted
                CROSS JOIN (SELECT CASE WHEN $9 THEN pg_notify('\(PostgresJobQueue.wakeUpChannel)', '') END) AS wake
            """
        static let bindingDataTypes = JobBatchInsert.bindingDataTypes + [.bool]
        var jobs: [NewJob]
        var notify: Bool

        func makeBindings() -> PostgresBindings {
            var bindings = PostgresBindings(capacity: 9)
            JobBatchInsert(jobs).appendBindings(to: &bindings)
            bindings.append(notify)
            return bindings
        }

        func decodeRow(_ row: PostgresRow) throws -> Int { try row.decode(Int.self) }
    }

    /// Claims up to `limit` runnable jobs; see ``PostgresJobQueue/claim(limit:workerID:)``. The statement is
    /// `claim_jobs` (sql/0005_claim_function.sql): the oldest due jobs whose concurrency key has no running job and no
    /// earlier due one, locked with `FOR UPDATE SKIP LOCKED` and marked running with the attempt bumped, planned with
    /// settings that keep it on the claim index however stale the table's statistics are.
    struct ClaimJobs: PostgresPreparedStatement {
        static let sql = "SELECT job_id, job_kind, job_attempt, job_max_attempts, job_arguments FROM claim_jobs($1, $2)"
        static let bindingDataTypes: [PostgresDataType] = [.int8, .uuid]
        var limit: Int
        var workerID: UUID

        func makeBindings() -> PostgresBindings {
            var bindings = PostgresBindings(capacity: 2)
            bindings.append(limit)
            bindings.append(workerID)
            return bindings
        }

        func decodeRow(_ row: PostgresRow) throws -> ClaimedJob {
            let (id, kind, attempt, maxAttempts, arguments) = try row.decode((Int64, String, Int, Int, String).self)
            return ClaimedJob(id: id, kind: kind, attempt: attempt, maxAttempts: maxAttempts, arguments: arguments)
        }
    }

    /// Moves a job still running under the claimed attempt to `job_history` and says whether it did
    /// (`complete_job`, sql/0020_complete_job.sql).
    struct CompleteJob: PostgresPreparedStatement {
        static let sql = "SELECT complete_job($1, $2)"
        static let bindingDataTypes: [PostgresDataType] = [.int8, .int8]
        var job: ClaimedJob

        func makeBindings() -> PostgresBindings {
            var bindings = PostgresBindings(capacity: 2)
            bindings.append(job.id)
            bindings.append(job.attempt)
            return bindings
        }

        func decodeRow(_ row: PostgresRow) throws -> Bool { try row.decode(Bool.self) }
    }

    /// Wakes listening workers (the intake's coalesced NOTIFY, see ``WorkerNotifier``).
    struct NotifyWorkers: PostgresPreparedStatement {
        typealias Row = ()
        static let sql = "SELECT pg_notify('\(PostgresJobQueue.wakeUpChannel)', '')"
        static let bindingDataTypes: [PostgresDataType] = []

        func makeBindings() -> PostgresBindings { PostgresBindings() }
        func decodeRow(_ row: PostgresRow) throws {}
    }

    /// When the earliest waiting job becomes due; asked by every idle worker.
    struct NextRunAt: PostgresPreparedStatement {
        static let sql = "SELECT min(run_at) FROM jobs WHERE state = 'available'"
        static let bindingDataTypes: [PostgresDataType] = []

        func makeBindings() -> PostgresBindings { PostgresBindings() }
        func decodeRow(_ row: PostgresRow) throws -> Date? { try row.decode(Date?.self) }
    }
}
