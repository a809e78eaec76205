import Foundation
import PostgresNIO
import Testing

@testable import IntegrationSupport

/// The group statements that find usage answers and holds by their keys keep finding them by key after their plans
/// were made on empty tables (sql/0053): a connection's generic plan of each is made at its first call, and one made
/// while the table was empty scanned the table's whole index at every later call as the table grew — on a new install,
/// until autovacuum had the plans made again. Blocks touched (`EXPLAIN (ANALYZE, BUFFERS)`, nested statements
/// included) after 20,000 rows arrived, on the connection that planned the statement first.
@Suite("Group statements that find rows by key, on real PostgreSQL")
struct KeyLookupPlanTests {
    static let rows = 20_000

    @Test(
        "planned while usage_requests and credit_holds were empty, a spend group's first statement, a hold group's read by key and the hold write's ends still probe by key once they hold 20,000 rows"
    )
    func plansMadeOnEmptyTablesStillProbeByKey() async throws {
        try await TestDatabase.withMigratedClient(maximumConnections: 1) { client in
            try await client.withConnection { connection in
                // Analysed empty, as a new install's are; autovacuum kept from analysing them again in between, which
                // would have the plans made again and hide a bad one.
                for table in ["usage_requests", "credit_holds"] {
                    try await connection.query(
                        PostgresQuery(unsafeSQL: "ALTER TABLE \(table) SET (autovacuum_enabled = off)"), logger: TestDatabase.logger)
                }
                try await connection.query("ANALYZE usage_requests, credit_holds", logger: TestDatabase.logger)
                let statements = [
                    "SELECT * FROM lock_accounts_and_read_answers(ARRAY['lock:account-10001'], ARRAY['account-10001'], ARRAY['k'])",
                    """
                    SELECT * FROM lock_accounts_read_hold_group(ARRAY['account-10001'], ARRAY[]::uuid[], ARRAY['account-10001'], ARRAY['k'],
                        ARRAY[]::text[], now())
                    """,
                    """
                    SELECT * FROM write_hold_group(ARRAY[]::text[], ARRAY[]::text[], ARRAY[]::bigint[], ARRAY[]::text[], now(),
                        ARRAY[]::uuid[], ARRAY[]::text[], ARRAY[]::text[], ARRAY[]::text[], ARRAY[]::bigint[], ARRAY[]::text[],
                        ARRAY[]::timestamptz[], ARRAY[]::timestamptz[], ARRAY[]::text[], ARRAY[]::bigint[], ARRAY[]::bigint[],
                        ARRAY[]::bigint[], ARRAY[]::timestamptz[],
                        ARRAY['00000000-0000-0000-0000-000000010001']::uuid[], ARRAY['released'], ARRAY[NULL]::bigint[], ARRAY[1]::bigint[],
                        ARRAY[0]::bigint[], ARRAY[now()], ARRAY[]::text[])
                    """,
                ]
                // The first call of each plans it, on tables with no rows.
                for statement in statements { _ = try await LiveBucketsReadTests.blocksTouched(by: statement, on: connection) }
                try await connection.query(
                    """
                    INSERT INTO usage_requests (account_id, idempotency_key, meter, amount, outcome, answer)
                    SELECT 'account-' || g, 'k', 'ai_requests', 1, 'spent', '{}' FROM generate_series(2, \(Self.rows + 1)) AS g
                    """, logger: TestDatabase.logger)
                try await connection.query(
                    """
                    INSERT INTO credit_holds (id, account_id, idempotency_key, meter, amount, debits, created_at, expires_at)
                    SELECT ('00000000-0000-0000-0000-' || lpad(g::text, 12, '0'))::uuid, 'account-' || g, 'k', 'ai_requests', 1, '[]', now(),
                        now() + interval '1 hour'
                    FROM generate_series(2, \(Self.rows + 1)) AS g
                    """, logger: TestDatabase.logger)
                for statement in statements {
                    let blocks = try await LiveBucketsReadTests.blocksTouched(by: statement, on: connection)
                    // A probe by key touches a few index pages; the whole index of 20,000 rows is about a hundred, and the
                    // rows besides. The keys asked for are in the middle of the rows (account-10001, hold …10001), where
                    // no plan finds them by reading only an end of an index.
                    #expect(blocks > 0 && blocks < 30, "\(blocks) blocks: \(statement.prefix(60))")
                }
            }
        }
    }
}
