import Foundation
import PostgresNIO

/// The `INSERT INTO jobs` of many jobs in one statement, their fields bound as arrays; jobs whose unique key is taken
/// are skipped.
///
/// With a guard, it enqueues jobs in the same statement as the caller's own insert, each only if that insert wrote its
/// row — a store-and-enqueue is then one round trip and needs no explicit transaction (one statement is atomic):
///
/// ```sql
/// WITH stored AS (INSERT INTO things … ON CONFLICT DO NOTHING RETURNING id),
///      queued AS (<JobBatchInsert.sql(firstParameter: 9, guardKeys: "SELECT id::text FROM stored")>)
/// SELECT id FROM stored
/// ```
///
/// PostgreSQL runs a data-modifying CTE whether or not the main query reads it. Workers are not notified: call
/// ``WorkerNotifier/signal()`` after the statement.
public struct JobBatchInsert: Sendable {
    /// The jobs, each with the key the guard must return for it to be inserted ('' without a guard).
    public var jobs: [(guardKey: String, job: NewJob)]

    public init(_ jobs: [(guardKey: String, job: NewJob)]) { self.jobs = jobs }

    public init(_ jobs: [NewJob]) { self.jobs = jobs.map { ("", $0) } }

    /// The statement (or CTE body, without `RETURNING`): the jobs bound as eight arrays from `$firstParameter`, inserted
    /// when their guard key is among `guardKeys` (a query of one text column), or all of them without a guard.
    public static func sql(firstParameter first: Int, guardKeys: String? = nil) -> String {
        let parameters = (first..<first + 8).map { "$\($0)" }.joined(separator: ", ")
        return """
            INSERT INTO jobs (kind, args, priority, run_at, max_attempts, attempt_budget, unique_key, concurrency_key)
            SELECT kind, args::jsonb, priority::smallint,
                   CASE WHEN run_at < 0 THEN now() ELSE to_timestamp(run_at) END,
                   max_attempts, max_attempts, NULLIF(unique_key, ''), NULLIF(concurrency_key, '')
            FROM unnest(\(parameters))
                 AS input(kind, args, priority, run_at, max_attempts, unique_key, concurrency_key, guard_key)
            \(guardKeys.map { "WHERE guard_key IN (\($0))" } ?? "")
            ON CONFLICT (unique_key) WHERE unique_key IS NOT NULL DO NOTHING
            """
    }

    /// The types of the eight arrays, for a statement's `bindingDataTypes`.
    public static let bindingDataTypes: [PostgresDataType] = [
        .textArray, .textArray, .int4Array, .float8Array, .int4Array, .textArray, .textArray, .textArray,
    ]

    /// Appends the eight arrays. Arrays cannot carry NULLs through the binding, so absent values travel as '' / -1
    /// and become NULL / now().
    public func appendBindings(to bindings: inout PostgresBindings) {
        bindings.append(jobs.map(\.job.kind))
        bindings.append(jobs.map(\.job.arguments))
        bindings.append(jobs.map { Int32($0.job.priority) })
        bindings.append(jobs.map { $0.job.runAt?.timeIntervalSince1970 ?? -1 })
        bindings.append(jobs.map { Int32($0.job.maxAttempts) })
        bindings.append(jobs.map { $0.job.uniqueKey ?? "" })
        bindings.append(jobs.map { $0.job.concurrencyKey ?? "" })
        bindings.append(jobs.map(\.guardKey))
    }
}
