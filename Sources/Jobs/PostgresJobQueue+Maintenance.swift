import Foundation
import PostgresNIO

extension PostgresJobQueue {
    /// Takes or renews the lease `name` for `holder` for `duration`; true when `holder` holds it afterwards. At most
    /// one worker holds a lease at a time, and a dead holder's lease simply expires.
    public func acquireLease(_ name: String, holder: UUID, for duration: Duration) async throws -> Bool {
        let seconds = Double(duration.components.seconds)
        let rows = try await client.fencedQuery(
            """
            INSERT INTO job_leases (name, holder, expires_at) VALUES (\(name), \(holder), now() + make_interval(secs => \(seconds)))
            ON CONFLICT (name) DO UPDATE SET holder = EXCLUDED.holder, expires_at = EXCLUDED.expires_at
            WHERE job_leases.holder = EXCLUDED.holder OR job_leases.expires_at < now()
            RETURNING holder
            """,
            logger: logger
        )
        return try await rows.first(UUID.self) == holder
    }

    /// Deletes up to `limit` finished jobs older than `retention` from `job_history`; returns how many.
    @discardableResult
    public func pruneHistory(olderThan retention: Duration, limit: Int = 10_000) async throws -> Int {
        let seconds = Double(retention.components.seconds) + Double(retention.components.attoseconds) / 1e18
        let rows = try await client.fencedQuery(
            """
            WITH pruned AS (
                DELETE FROM job_history WHERE id IN (
                    SELECT id FROM job_history WHERE finished_at < now() - make_interval(secs => \(seconds))
                    ORDER BY finished_at LIMIT \(limit))
                RETURNING 1
            )
            SELECT count(*) FROM pruned
            """,
            logger: logger
        )
        return try await rows.first(Int.self) ?? 0
    }

    /// Enqueues every slot of `schedule` that is due at `now` and not yet enqueued — missed slots included, in order —
    /// and advances the schedule, in one transaction. Any number of workers may call it at once: the schedule row is
    /// locked with SKIP LOCKED, so one enqueues and the others return 0, and each slot's job has a unique key.
    @discardableResult
    public func enqueueDueSlots(of schedule: PeriodicSchedule, now: Date) async throws -> Int {
        let current = schedule.slot(containing: now)
        return try await client.withFencedTransaction(logger: logger) { connection in
            // A new schedule starts with the current slot; it does not backfill history it never had.
            try await connection.query(
                """
                INSERT INTO job_schedules (name, last_slot) VALUES (\(schedule.name), \(current.addingTimeInterval(-schedule.interval)))
                ON CONFLICT (name) DO NOTHING
                """,
                logger: logger
            )
            let rows = try await connection.query(
                "SELECT last_slot FROM job_schedules WHERE name = \(schedule.name) FOR UPDATE SKIP LOCKED", logger: logger)
            var lastSlot: Date?
            for try await slot in rows.decode(Date.self) { lastSlot = slot }
            guard let lastSlot else { return 0 }
            let due = schedule.slots(after: lastSlot, through: current)
            guard let newest = due.last else { return 0 }
            let jobs = try due.map { try schedule.job(for: $0) }
            let inserted = try await enqueue(jobs, on: connection)
            try await connection.query(
                "UPDATE job_schedules SET last_slot = \(newest) WHERE name = \(schedule.name)", logger: logger)
            return inserted
        }
    }
}
