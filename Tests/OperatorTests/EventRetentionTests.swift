import Foundation
import Persistence
import PostgresNIO
import Testing

@testable import IntegrationSupport

/// Events past their retention go a batch at a time (`EventLog.deleteEvents`, which the hourly `event-retention` job
/// calls until a batch comes back short), with their deliveries and attempts, on real PostgreSQL.
@Suite("Event retention: old events deleted in batches")
struct EventRetentionTests {
    @Test(
        "the oldest first, at most a batch a statement, each with its deliveries and attempts; newer events and their logs stay; an event another transaction holds is skipped, then deleted"
    )
    func batches() async throws {
        try await StorekeeperHarness.run(worker: false) { harness in
            // 25 events 40 days old, a second apart, the first written the newest (so neither insertion nor key order
            // is age order), and 5 of today; each with a delivery and an attempt.
            try await harness.client.query(
                """
                WITH made AS (
                    INSERT INTO events (dedup_key, type, account_id, environment, created_at, body)
                    SELECT 'retention-test:' || g, 'credits.low', 'retention-account', 'Sandbox',
                        CASE WHEN g <= 25 THEN now() - interval '40 days' - g * interval '1 second' ELSE now() END, '{}'::jsonb
                    FROM generate_series(1, 30) AS g
                    RETURNING id, account_id, sequence, created_at
                ), delivered AS (
                    INSERT INTO webhook_deliveries (endpoint, event_id, account_id, sequence)
                    SELECT 'https://receiver.example/hook', id, account_id, sequence FROM made
                )
                INSERT INTO webhook_attempts (endpoint, event_id, attempted_at, status_code, latency_ms)
                SELECT 'https://receiver.example/hook', id, created_at, 500, 3 FROM made
                """, logger: TestDatabase.logger)
            let log = EventLog(logger: TestDatabase.logger)
            let cutoff = Date().addingTimeInterval(-30 * 86_400)
            func delete(_ limit: Int) async throws -> Int {
                try await harness.client.withConnection { try await log.deleteEvents(before: cutoff, limit: limit, on: $0) }
            }
            func counts() async throws -> [Int] {
                try await [
                    harness.count("SELECT count(*) FROM events"), harness.count("SELECT count(*) FROM webhook_deliveries"),
                    harness.count("SELECT count(*) FROM webhook_attempts"),
                ]
            }

            #expect(try await delete(10) == 10)
            #expect(try await counts() == [20, 20, 20])
            #expect(
                try await harness.count("SELECT max(substr(dedup_key, 16)::int) FROM events WHERE created_at < now() - interval '1 day'") == 15,
                "the ten oldest (written 16th to 25th) went, none of the others")

            // The next oldest held by another transaction (as recording a delivery attempt or an erasure holds it):
            // skipped, not waited for (a wait would end at the lock timeout, and fail the test).
            try await harness.client.withTransaction(logger: TestDatabase.logger) { connection in
                try await connection.query("SELECT 1 FROM events WHERE dedup_key = 'retention-test:15' FOR KEY SHARE", logger: TestDatabase.logger)
                let deleted = try await harness.client.withTransaction(logger: TestDatabase.logger) { other in
                    try await other.query("SET LOCAL lock_timeout = '5s'", logger: TestDatabase.logger)
                    return try await log.deleteEvents(before: cutoff, limit: 100, on: other)
                }
                #expect(deleted == 14)
            }
            #expect(try await counts() == [6, 6, 6])
            #expect(try await delete(100) == 1)
            #expect(try await delete(100) == 0)
            #expect(try await counts() == [5, 5, 5], "today's events and their logs stay")
        }
    }

    @Test("the hourly job works off a backlog past one batch in a run: 2,500 events past the retention all go, today's stay")
    func jobLoops() async throws {
        try await StorekeeperHarness.run { harness in
            try await harness.client.query(
                """
                INSERT INTO events (dedup_key, type, account_id, environment, created_at, body)
                SELECT 'backlog:' || g, 'credits.low', 'retention-account', 'Sandbox',
                    CASE WHEN g <= 2500 THEN now() - interval '40 days' ELSE now() END, '{}'::jsonb
                FROM generate_series(1, 2503) AS g
                """, logger: TestDatabase.logger)
            // The job as its hourly schedule enqueues it (a run at the worker's start may have gone first; either way
            // no run stops after one batch, or 500 would be left).
            try await harness.runJob("event-retention", uniqueKey: "backlog", timeout: .seconds(60))
            #expect(try await harness.count("SELECT count(*) FROM events WHERE dedup_key LIKE 'backlog:%'") == 3)
        }
    }
}
