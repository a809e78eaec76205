import Foundation
import PostgresNIO
import Testing

@testable import IntegrationSupport

/// What an apply writes, read from PostgreSQL itself: every row a transaction inserted or updated carries its id
/// (`xmin`), so the rows of each table that carry the apply's are what it wrote — whatever the code meant to write.
@Suite("An apply writes what changed, on real PostgreSQL")
struct ChangedWritesTests {
    @Test("an older notification whose facts change nothing writes its outcome and its job's completion only; a renewal writes its change")
    func unchangedWritesOnlyTheOutcome() async throws {
        try await StorekeeperHarness.run(environment: ["STOREKEEPER_APPLIES_PER_TRANSACTION": "1"]) { harness in
            try await harness.withHTTP { client in
                var flow = LifecycleFlow(harness: harness, client: client, account: UUID())
                let subscribed = try await flow.send(.subscribe)
                try await flow.send(.renew)
                // The check sees writes: the renewal saved its new period, filed its transaction and posted its grant.
                let renewal = try await harness.rowsWritten(byTheApplyOf: "type DID_RENEW")
                for table in ["subscriptions", "subscription_transactions", "credit_ledger", "credit_buckets", "notifications", "job_history"] {
                    #expect(renewal[table, default: 0] >= 1, "the renewal wrote no row of \(table): \(renewal)")
                }
                // The first notification again under a new id, as Apple sends an older event late: the subscription's
                // facts already say all it says.
                let late = UUID()
                try await flow.post(subscribed, notificationUUID: late)
                let written = try await harness.rowsWritten(byTheApplyOf: "uuid \(late)")
                #expect(written == ["notifications": 1, "job_history": 1])
                #expect(
                    try await harness.count(
                        "SELECT count(*) FROM notifications WHERE notification_uuid = '\(late)' AND apply_outcome = 'unchanged'") == 1)
                #expect(try await flow.detailAnswer().lastEventType == "DID_RENEW")
            }
        }
    }
}

extension StorekeeperHarness {
    /// The rows of each table that the transaction which applied one notification wrote and left (`which`: `uuid U`
    /// or `type T`, the newest of that type), by table; tables it left alone are not listed.
    func rowsWritten(byTheApplyOf which: String) async throws -> [String: Int] {
        let parts = which.split(separator: " ", maxSplits: 1).map(String.init)
        let condition = parts[0] == "uuid" ? "notification_uuid = '\(parts[1])'" : "notification_type = '\(parts[1])'"
        let rows = try await client.query(
            PostgresQuery(
                unsafeSQL: """
                    WITH apply AS (SELECT xmin::text AS id FROM notifications WHERE \(condition) ORDER BY received_at DESC LIMIT 1)
                    SELECT t.relname::text, (xpath('/row/c/text()', query_to_xml(
                        format('SELECT count(*) AS c FROM %I WHERE xmin::text = %L', t.relname, apply.id), false, true, '')))[1]::text::int
                    FROM pg_stat_user_tables t, apply WHERE t.schemaname = 'public'
                    """), logger: TestDatabase.logger)
        var written: [String: Int] = [:]
        for try await (table, count) in rows.decode((String, Int).self) where count > 0 { written[table] = count }
        return written
    }
}
