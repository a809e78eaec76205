import Credits
import Foundation
import Persistence
import PostgresNIO
import Subscriptions
import Testing

@testable import IntegrationSupport

/// The posts of a shared transaction's applies left to one round trip (`CreditLedger.DeferredPosts`): nothing is
/// written until the flush, the flush writes every row in order, a flush finding a row posted already fails (the
/// statuses worked out counted it), and only the accounts waiting are flushed for.
@Suite("Credit posts left to one round trip, on real PostgreSQL")
struct DeferredPostsTests {
    static func grant(_ subscription: String, _ amount: Int64, at now: Date) -> [LedgerOperation] {
        let bucket = CreditBucket(
            key: "cycle:\(subscription):1:ai_requests", meter: "ai_requests", kind: .cycle, originalTransactionId: subscription,
            billingPeriod: "\(subscription):1", validFrom: now, validUntil: now.addingTimeInterval(30 * 86_400))
        return [
            .post(LedgerEntry(operationKey: "grant:\(subscription):1", bucket: bucket.key, delta: amount, reason: "cycle"), opening: bucket),
            .post(LedgerEntry(operationKey: "nothing:\(subscription)", bucket: bucket.key, delta: 0, reason: "zero writes no row"), opening: nil),
        ]
    }

    @Test(
        "nothing is written before the flush; the flush writes each row once, in one round trip; a row posted already fails it; only waiting accounts are flushed for; another instant flushes first"
    )
    func deferredPosts() async throws {
        try await TestDatabase.withMigratedClient(maximumConnections: 1) { client in
            let ledger = CreditLedger(catalogue: try TierCatalogue.load(path: "config/tiers.yml").get(), logger: TestDatabase.logger)
            let (first, second, other) = (AccountID(UUID()), AccountID(UUID()), AccountID(UUID()))
            let now = Date()
            func count(_ sql: String, on connection: PostgresConnection) async throws -> Int {
                for try await n in try await connection.query(PostgresQuery(unsafeSQL: sql), logger: TestDatabase.logger).decode(Int.self) {
                    return n
                }
                return -1
            }

            try await client.withTransaction(logger: TestDatabase.logger) { connection in
                var posts: CreditLedger.DeferredPosts? = CreditLedger.DeferredPosts()
                let keys = try await ledger.deferPosting(Self.grant("d-1", 10, at: now), of: first, at: now, into: &posts!, on: connection)
                #expect(keys == ["grant:d-1:1"], "the zero delta writes no row")
                _ = try await ledger.deferPosting(Self.grant("d-2", 20, at: now), of: second, at: now, into: &posts!, on: connection)
                #expect(try await count("SELECT count(*) FROM credit_ledger", on: connection) == 0, "nothing before the flush")
                #expect(posts?.isEmpty == false && posts?.touches([nil, second]) == true && posts?.touches([other, nil]) == false)

                try await ledger.flush(&posts, touching: [other], on: connection)
                #expect(try await count("SELECT count(*) FROM credit_ledger", on: connection) == 0, "another account flushes nothing")
                try await ledger.flush(&posts, touching: [first], on: connection)
                #expect(posts?.isEmpty == true)
                let both = "SELECT sum(delta)::bigint FROM credit_ledger WHERE operation_key IN ('grant:d-1:1', 'grant:d-2:1')"
                #expect(try await count(both, on: connection) == 30, "both applies' rows, in one flush")

                // A later instant: what waits is posted at its own first.
                _ = try await ledger.deferPosting(Self.grant("d-3", 5, at: now), of: first, at: now, into: &posts!, on: connection)
                _ = try await ledger.deferPosting(
                    Self.grant("d-4", 5, at: now), of: second, at: now.addingTimeInterval(1), into: &posts!, on: connection)
                #expect(try await count("SELECT count(*) FROM credit_ledger WHERE operation_key = 'grant:d-3:1'", on: connection) == 1)
                #expect(try await count("SELECT count(*) FROM credit_ledger WHERE operation_key = 'grant:d-4:1'", on: connection) == 0)
                try await ledger.flush(&posts, on: connection)
                #expect(try await count("SELECT count(*) FROM credit_ledger", on: connection) == 4)
            }

            // Two applies naming one row: the first's posts go before the second's are added, so the row is written
            // once and the second's flush, which counted it, fails.
            let twice = await #expect(throws: PostgresTransactionError.self) {
                try await client.withTransaction(logger: TestDatabase.logger) { connection in
                    var posts = CreditLedger.DeferredPosts()
                    _ = try await ledger.deferPosting(Self.grant("d-6", 3, at: now), of: first, at: now, into: &posts, on: connection)
                    _ = try await ledger.deferPosting(Self.grant("d-6", 3, at: now), of: second, at: now, into: &posts, on: connection)
                    #expect(try await count("SELECT count(*) FROM credit_ledger WHERE operation_key = 'grant:d-6:1'", on: connection) == 1)
                    try await ledger.flush(&posts, on: connection)
                }
            }
            #expect((twice?.closureError as? PersistenceError)?.code == .postedAlready, "\(String(describing: twice))")

            // A row posted already: the flush fails (and with it the transaction), whatever else it wrote.
            let failure = await #expect(throws: PostgresTransactionError.self) {
                try await client.withTransaction(logger: TestDatabase.logger) { connection in
                    var posts = CreditLedger.DeferredPosts()
                    _ = try await ledger.deferPosting(Self.grant("d-5", 7, at: now), of: first, at: now, into: &posts, on: connection)
                    _ = try await ledger.deferPosting(Self.grant("d-1", 10, at: now), of: second, at: now, into: &posts, on: connection)
                    try await ledger.flush(&posts, on: connection)
                }
            }
            #expect((failure?.closureError as? PersistenceError)?.code == .postedAlready, "\(String(describing: failure))")
            let kept = try await client.withConnection { connection in
                try await count("SELECT count(*) FROM credit_ledger WHERE operation_key = 'grant:d-5:1'", on: connection)
            }
            #expect(kept == 0, "the failed flush's transaction keeps nothing")
        }
    }
}
