import Foundation
import PostgresNIO
import Subscriptions
import Testing

@testable import IntegrationSupport
@testable import Persistence

/// `CreditLedger.noteTakenElsewhere` runs in every apply of a subscription that had a prorated refund, for as long as
/// it lives: on the top-ups of the accounts that owned it before, it must read the claw-back's rows through the
/// ledger's partial indexes of take-backs and claims (sql/0037, sql/0038), not every row of a top-up that has served
/// years of spends. The statement asked is the one the apply sends (`CreditLedger.takenElsewhereQuery`), with its binds.
@Suite("A claw-back's look-up of a former owner's take-backs, on real PostgreSQL")
struct TakenElsewherePlanTests {
    @Test(
        "with 50,000 spends in the former owner's top-up, the look-up finds the period's take, its claim and the claim's payment, and a take reversed (marked), not another period's, in a few blocks"
    )
    func readsThroughTheIndexes() async throws {
        try await TestDatabase.withMigratedClient(maximumConnections: 1) { client in
            try await client.withConnection { connection in
                let former = "account-former"
                let bucket = "topup:\(former):ai_requests"
                func run(_ query: PostgresQuery) async throws { try await connection.query(query, logger: TestDatabase.logger) }
                try await run(
                    "INSERT INTO credit_buckets (key, meter, kind, account_id, valid_from) VALUES (\(bucket), 'ai_requests', 'topup', \(former), now())"
                )
                try await run(
                    "INSERT INTO account_transfers (original_transaction_id, from_account, to_account) VALUES ('s-1', \(former), 'account-owner')")
                try await run(
                    "INSERT INTO credit_ledger (operation_key, bucket, delta, reason) VALUES ('adjust:start', \(bucket), 100000, 'support')")
                try await run(
                    """
                    INSERT INTO credit_ledger (operation_key, bucket, delta, reason)
                    SELECT 'spend:' || g || ':0', \(bucket), -1, 'debit' FROM generate_series(1, 50000) AS g
                    """)
                let take = "clawback:s-1.0:1000:\(bucket)"
                let again = "clawback:s-1.0:2000:\(bucket)"
                try await run(
                    """
                    INSERT INTO credit_ledger (operation_key, bucket, delta, reason) VALUES
                        (\(take), \(bucket), -400, 'prorated refund'), ('claim:' || \(take), \(bucket), 100, 'claim'),
                        ('claim:' || \(take) || ':paid:hold-return:h:0', \(bucket), -100, 'claim paid'),
                        (\(again), \(bucket), -10, 'prorated refund'), ('reversed:' || \(again), \(bucket), 10, 'refund reversed'),
                        ('clawback:s-1.09:1000:' || \(bucket), \(bucket), -5, 'prorated refund')
                    """)
                try await run("ANALYZE credit_ledger, credit_buckets, account_transfers")
                let query = CreditLedger.takenElsewhereQuery(
                    of: "s-1", owner: AccountID("account-owner"), storedOwner: AccountID("account-owner"), prefixes: ["clawback:s-1.0:"])

                var found: [String: Bool] = [:]
                for try await (key, _, _, _, _, reversed) in try await connection.query(query, logger: TestDatabase.logger)
                    .decode((String, String, Int64, String, String, Bool).self)
                {
                    found[key] = reversed
                }
                // Not period `s-1.09`'s, whose key begins with the same characters but for the prefix's colon.
                #expect(
                    found == [take: false, "claim:\(take)": false, "claim:\(take):paid:hold-return:h:0": false, again: true], "\(found)")

                let plan = try await connection.query(
                    PostgresQuery(unsafeSQL: "EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) " + query.sql, binds: query.binds), logger: TestDatabase.logger)
                var blocks = 0
                for try await text in plan.decode(String.self) {
                    let top = try #require(
                        (try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [[String: Any]])?.first?["Plan"] as? [String: Any])
                    blocks = (top["Shared Hit Blocks"] as? Int ?? 0) + (top["Shared Read Blocks"] as? Int ?? 0)
                }
                // The top-up's 50,000 rows fill a few hundred pages; the index entries of its six take-backs and claims
                // a few.
                #expect(blocks > 0 && blocks < 60, "\(blocks) blocks")
            }
        }
    }
}
