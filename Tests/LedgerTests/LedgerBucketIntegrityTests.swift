import Foundation
import PostgresNIO
import Testing

@testable import IntegrationSupport

/// A ledger row names a bucket that exists, without the foreign key that locked the bucket for every row (sql/0055):
/// the kept balance's key (every posting writes or locks its buckets' balance rows) and the guards on `credit_buckets`
/// refuse what the key refused, a row posted leaves its bucket unlocked, and a deletion racing a posting waits for it.
@Suite("Ledger rows and their buckets, on real PostgreSQL")
struct LedgerBucketIntegrityTests {
    static let insert = "INSERT INTO credit_ledger (operation_key, bucket, delta, reason) VALUES"

    @Test(
        "a row for a bucket that does not exist, moved to one, or left behind by a deleted bucket is refused, and a bucket with rows is not deleted, given a new key or truncated, as the foreign key refused them"
    )
    func refusedAsBefore() async throws {
        try await TestDatabase.withMigratedClient(maximumConnections: 1) { client in
            try await client.withConnection { connection in
                func run(_ sql: String) async throws { try await connection.query(PostgresQuery(unsafeSQL: sql), logger: TestDatabase.logger) }
                func refused(_ sql: String, _ why: Comment) async throws {
                    do {
                        try await run(sql)
                        Issue.record("taken: \(sql) — \(why)")
                    } catch let error as PSQLError {
                        #expect(error.serverInfo?[.sqlState] == "23503", "\(why): \(String(reflecting: error))")
                    }
                }
                func ledger() async throws -> [String] {
                    var rows: [String] = []
                    let query = "SELECT operation_key || ' ' || bucket || ' ' || delta FROM credit_ledger ORDER BY operation_key"
                    for try await row in try await connection.query(PostgresQuery(unsafeSQL: query), logger: TestDatabase.logger).decode(String.self)
                    {
                        rows.append(row)
                    }
                    return rows
                }
                try await run(
                    """
                    INSERT INTO credit_buckets (key, meter, kind, account_id, valid_from) VALUES
                        ('topup:a:m', 'm', 'topup', 'a', now()), ('topup:b:m', 'm', 'topup', 'b', now())
                    """)
                try await run("\(Self.insert) ('k1', 'topup:a:m', 5, 'x')")
                try await refused("\(Self.insert) ('k2', 'topup:none:m', 3, 'x')", "a balance for a bucket that does not exist")
                try await refused(
                    "\(Self.insert) ('k3', 'topup:none:m', 3, 'x'), ('k4', 'topup:none:m', -3, 'x')", "rows that net to nothing, no balance to write")
                // Rows that net to nothing in a bucket that exists, as a whole settle's charge and its offset.
                try await run("\(Self.insert) ('k5', 'topup:a:m', 2, 'x'), ('k6', 'topup:a:m', -2, 'x')")
                try await refused("DELETE FROM credit_buckets WHERE key = 'topup:a:m'", "a bucket with rows")
                try await refused("UPDATE credit_ledger SET bucket = 'topup:none:m' WHERE operation_key IN ('k5', 'k6')", "rows moved nowhere")
                // As an erasure does: the rows moved to another bucket, then the bucket deleted.
                try await run("UPDATE credit_ledger SET bucket = 'topup:b:m'")
                try await run("DELETE FROM credit_buckets WHERE key = 'topup:a:m'")
                try await refused("\(Self.insert) ('k7', 'topup:a:m', 1, 'x')", "a bucket deleted")
                try await refused(
                    "\(Self.insert) ('k8', 'topup:a:m', 1, 'x'), ('k9', 'topup:a:m', -1, 'x')", "a bucket deleted, rows netting to nothing")
                // Rows that net to nothing moved to a bucket with no balance row: only the bucket's own guards keep it.
                try await run("INSERT INTO credit_buckets (key, meter, kind, account_id, valid_from) VALUES ('topup:c:m', 'm', 'topup', 'c', now())")
                try await run("UPDATE credit_ledger SET bucket = 'topup:c:m' WHERE operation_key IN ('k5', 'k6')")
                try await refused("UPDATE credit_buckets SET key = 'topup:d:m' WHERE key = 'topup:c:m'", "a bucket with rows given a new key")
                try await refused("TRUNCATE credit_buckets CASCADE", "the buckets emptied under the ledger")
                #expect(try await ledger() == ["k1 topup:b:m 5", "k5 topup:c:m 2", "k6 topup:c:m -2"])
                let orphans = try await connection.query(PostgresQuery(unsafeSQL: StorekeeperHarness.orphanedLedgerRows), logger: TestDatabase.logger)
                for try await count in orphans.decode(Int.self) { #expect(count == 0) }
                // The ledger and its buckets emptied together, as the foreign key let them be.
                try await run("TRUNCATE credit_ledger, credit_buckets CASCADE")
                #expect(try await ledger().isEmpty)
            }
        }
    }

    @Test("a row posted to a bucket with a balance leaves the bucket's row unlocked (sql/0003's key held it FOR KEY SHARE until the commit)")
    func postingLocksNoBucket() async throws {
        try await TestDatabase.withMigratedClient(maximumConnections: 2) { client in
            try await client.withConnection { writer in
                try await writer.query(
                    "INSERT INTO credit_buckets (key, meter, kind, account_id, valid_from) VALUES ('topup:a:m', 'm', 'topup', 'a', now())",
                    logger: TestDatabase.logger)
                // The bucket's first row inserts its balance, whose key is checked (and locks the bucket) once.
                try await writer.query(PostgresQuery(unsafeSQL: "\(Self.insert) ('k1', 'topup:a:m', 5, 'x')"), logger: TestDatabase.logger)
                try await writer.query("BEGIN", logger: TestDatabase.logger)
                try await writer.query(PostgresQuery(unsafeSQL: "\(Self.insert) ('k2', 'topup:a:m', -1, 'usage')"), logger: TestDatabase.logger)
                try await client.withConnection { other in
                    let rows = try await other.query(
                        "SELECT key FROM credit_buckets WHERE key = 'topup:a:m' FOR UPDATE NOWAIT", logger: TestDatabase.logger)
                    var locked: [String] = []
                    for try await key in rows.decode(String.self) { locked.append(key) }
                    #expect(locked == ["topup:a:m"], "another transaction can lock the bucket while the post is open")
                }
                try await writer.query("COMMIT", logger: TestDatabase.logger)
            }
            #expect(try await TestDatabase.count(client, "SELECT balance::int FROM credit_bucket_balances WHERE bucket = 'topup:a:m'") == 4)
        }
    }

    /// What races a bucket's deletion: rows netting to nothing posted to it, or moved into it (as a whole settle's
    /// charge and its offset).
    static let postings = [
        "\(insert) ('k4', 'topup:a:m', 2, 'hold charged'), ('k5', 'topup:a:m', -2, 'usage')",
        "UPDATE credit_ledger SET bucket = 'topup:a:m' WHERE operation_key IN ('k2', 'k3')",
    ]

    @Test(
        "a bucket's deletion racing a posting or a move of rows that net to nothing waits for it, then is refused: the posting locked the kept balance, which the deletion must delete",
        arguments: postings
    )
    func deletionWaitsForPosting(_ posting: String) async throws {
        try await TestDatabase.withMigratedClient(maximumConnections: 3) { client in
            func run(_ sql: String, on connection: PostgresConnection) async throws {
                try await connection.query(PostgresQuery(unsafeSQL: sql), logger: TestDatabase.logger)
            }
            try await client.withConnection { poster in
                try await run(
                    """
                    INSERT INTO credit_buckets (key, meter, kind, account_id, valid_from) VALUES
                        ('topup:a:m', 'm', 'topup', 'a', now()), ('topup:s:m', 'm', 'topup', 's', now())
                    """, on: poster)
                try await run("\(Self.insert) ('k1', 'topup:a:m', 5, 'x'), ('k2', 'topup:s:m', 2, 'x'), ('k3', 'topup:s:m', -2, 'x')", on: poster)
                try await run("DELETE FROM credit_ledger WHERE operation_key = 'k1'", on: poster)
                // Bucket a has a balance row (0) and no rows: a deletion alone would go through.
                try await run("BEGIN", on: poster)
                try await run(posting, on: poster)
                async let deletion: Void = client.withConnection { deleter in
                    try await run("DELETE FROM credit_buckets WHERE key = 'topup:a:m'", on: deleter)
                }
                try await eventually(timeout: .seconds(10), "the deletion to wait for the posting's lock") {
                    try await TestDatabase.count(
                        client,
                        """
                        SELECT count(*) FROM pg_stat_activity
                        WHERE datname = current_database() AND query LIKE 'DELETE FROM credit_buckets%' AND wait_event_type = 'Lock'
                        """) == 1
                }
                try await run("COMMIT", on: poster)
                do {
                    try await deletion
                    Issue.record("the bucket was deleted with the rows just posted to it")
                } catch let error as PSQLError {
                    #expect(error.serverInfo?[.sqlState] == "23503", "\(String(reflecting: error))")
                }
            }
            #expect(
                try await TestDatabase.count(
                    client, "SELECT count(*) FROM credit_ledger l JOIN credit_buckets k ON k.key = l.bucket AND k.key = 'topup:a:m'") == 2)
            #expect(try await TestDatabase.count(client, StorekeeperHarness.orphanedLedgerRows) == 0)
        }
    }
}
