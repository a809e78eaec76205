import Credits
import Foundation
import Persistence
import PostgresNIO
import StorekeeperRuntime
import Subscriptions
import Testing

@testable import IntegrationSupport

@Suite("The live-bucket and status-input reads, on real PostgreSQL")
struct LiveBucketsReadTests {
    /// The reads' plans are made once per connection (sql/0014_live_credit_buckets.sql, sql/0017_account_status_inputs.sql,
    /// sql/0018_subscription_and_events.sql).
    /// Made while the tables hold a row each, with statistics to match, a plan free to scan would keep scanning whole
    /// tables that have since grown (without the function's `enable_seqscan = off`, the live-bucket read touched 2,371
    /// blocks); these must keep probing by index.
    @Test("plans made on one-row tables still read an account's buckets and subscriptions, and a subscription's history, by index at 20,000 rows")
    func planMadeOnSmallTablesStaysIndexed() async throws {
        try await TestDatabase.withMigratedClient(maximumConnections: 1) { client in
            let ledger = CreditLedger(catalogue: try TierCatalogue.load(path: "config/tiers.yml").get(), logger: TestDatabase.logger)
            let now = Date()
            try await client.withConnection { connection in
                try await Self.store(accounts: 1...1, on: connection)
                for table in ["credit_buckets", "credit_ledger", "subscriptions", "notifications"] {
                    try await connection.query("ANALYZE \(unescaped: table)", logger: TestDatabase.logger)
                }
                let first = try #require(AccountID("account-1"))
                for _ in 0..<8 {
                    _ = try await ledger.liveBuckets(of: [first], at: now, on: connection)
                    _ = try await ledger.statusInputs(of: first, at: now, on: connection)
                    _ = try await SubscriptionHistory(logger: TestDatabase.logger).subscriptionAndEvents(of: "s-1", on: connection)
                }

                try await Self.store(accounts: 2...20_000, on: connection)
                let account = try #require(AccountID("account-777"))
                let live = try await ledger.liveBuckets(of: [account], at: now, on: connection)
                #expect(live.keys.sorted { $0.text < $1.text } == [account])
                #expect(live[account]?.map(\.bucket.key) == ["cycle:s-777:m0", "topup:account-777"])
                #expect(live[account]?.map(\.balance) == [777, 5])

                let inputs = try await ledger.statusInputs(of: account, at: now, on: connection)
                #expect(inputs.subscriptions.map(\.originalTransactionId) == ["s-777"])
                #expect(inputs.buckets.map(\.bucket.key) == ["cycle:s-777:m0", "topup:account-777"])
                #expect(inputs.buckets.map(\.balance) == [777, 5])

                let (subscription, events) = try await SubscriptionHistory(logger: TestDatabase.logger).subscriptionAndEvents(
                    of: "s-777", on: connection)
                #expect(subscription?.accountId == account)
                #expect(events.isEmpty)

                for call in [
                    "live_credit_buckets(ARRAY['account-777'], now(), false)", "account_status_inputs(ARRAY['account-777'], now(), false)",
                    "subscription_and_events('s-777')",
                ] {
                    let blocks = try await Self.blocksTouched(by: "SELECT * FROM \(call)", on: connection)
                    #expect(blocks > 0)
                    #expect(blocks < 60, "\(call) touched \(blocks) blocks")
                }
            }
        }
    }

    /// The shared buffers (hit or read) the statement `sql` touched as it ran, from `EXPLAIN (ANALYZE, BUFFERS)`.
    static func blocksTouched(by sql: String, on connection: PostgresConnection) async throws -> Int {
        let plan = try await connection.query(
            PostgresQuery(unsafeSQL: "EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) " + sql), logger: TestDatabase.logger)
        var blocks = 0
        for try await text in plan.decode(String.self) {
            let top = try #require(
                (try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [[String: Any]])?.first?["Plan"] as? [String: Any])
            blocks = (top["Shared Hit Blocks"] as? Int ?? 0) + (top["Shared Read Blocks"] as? Int ?? 0)
        }
        return blocks
    }

    /// Each account `account-N` gets a subscription `s-N` with a cycle bucket holding N credits and a top-up bucket
    /// holding 5, and a notification with rejected content; nothing is analyzed.
    static func store(accounts: ClosedRange<Int>, on connection: PostgresConnection) async throws {
        let (low, high) = (accounts.lowerBound, accounts.upperBound)
        try await connection.query(
            """
            INSERT INTO subscriptions (original_transaction_id, account_id, product_id, environment, status, will_renew,
                auto_renew_product_id, purchase_date, expires_at, is_trial, ownership, latest_transaction_id, last_event_type,
                last_signed_date, last_event_id, billing_period)
            SELECT 's-' || g, 'account-' || g, 'pro.monthly', 'Sandbox', 'active', true, 'pro.monthly', now() - interval '1 day',
                now() + interval '29 days', false, 'PURCHASED', 's-' || g, 'SUBSCRIBED', 0, '', 's-' || g
            FROM generate_series(\(low), \(high)) AS g
            """, logger: TestDatabase.logger)
        try await connection.query(
            """
            INSERT INTO credit_buckets (key, meter, kind, original_transaction_id, billing_period, account_id, valid_from, valid_until)
            SELECT 'cycle:s-' || g || ':m0', 'ai_requests', 'cycle', 's-' || g, 's-' || g, NULL, now() - interval '1 day',
                now() + interval '29 days'
            FROM generate_series(\(low), \(high)) AS g
            UNION ALL
            SELECT 'topup:account-' || g, 'ai_requests', 'topup', NULL, NULL, 'account-' || g, now() - interval '1 day', NULL
            FROM generate_series(\(low), \(high)) AS g
            """, logger: TestDatabase.logger)
        try await connection.query(
            """
            INSERT INTO credit_ledger (operation_key, bucket, delta, reason)
            SELECT 'grant:s-' || g, 'cycle:s-' || g || ':m0', g, 'grant' FROM generate_series(\(low), \(high)) AS g
            UNION ALL
            SELECT 'topup:' || g, 'topup:account-' || g, 5, 'topup' FROM generate_series(\(low), \(high)) AS g
            """, logger: TestDatabase.logger)
        // Content the intake refused: stored, never a fact, so every history read below finds it and leaves it out.
        try await connection.query(
            """
            INSERT INTO notifications (notification_uuid, notification_type, environment, original_transaction_id, signed_date,
                signed_payload, decoded, received_at, applied_at, apply_outcome, rejected_reason)
            SELECT gen_random_uuid(), 'SUBSCRIBED', 'Sandbox', 's-' || g, 0, repeat('x', 200), '{}'::jsonb, now(), now(),
                'rejected_content', 'test'
            FROM generate_series(\(low), \(high)) AS g
            """, logger: TestDatabase.logger)
    }
}
