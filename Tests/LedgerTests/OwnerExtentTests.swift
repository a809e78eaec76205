import Credits
import Foundation
import Persistence
import PostgresNIO
import Subscriptions
import Testing

@testable import IntegrationSupport

/// The save's snapshot says whether the owner has anything it and the subscription do not show (sql/0054): then the
/// events' status is read again, else worked out (`CreditLedger.StatusInputs.after`). Each thing `account_status_inputs`
/// would find beyond them must say so; what it would not find must not.
@Suite("Whether an owner has more than the snapshot shows, on real PostgreSQL")
struct OwnerExtentTests {
    @Test(
        "another subscription, a grant in force and a bucket of its own opening later each say more; an ended grant, a closed bucket, a live top-up and the subscription itself do not; no owner says more"
    )
    func ownerExtent() async throws {
        try await TestDatabase.withMigratedClient(maximumConnections: 1) { client in
            let ledger = CreditLedger(catalogue: try TierCatalogue.load(path: "config/tiers.yml").get(), logger: TestDatabase.logger)
            let account = AccountID(UUID())
            let now = Date()
            func hasMore(_ owner: AccountID? = account) async throws -> Bool {
                try await client.withTransaction(logger: TestDatabase.logger) { connection in
                    try await ledger.snapshot(
                        savingDerivation: .init(originalTransactionId: "s-1", account: owner, state: nil, transactionIds: [], contribution: nil),
                        now: now, on: connection
                    ).ownerHasMore
                }
            }
            func run(_ sql: String) async throws {
                _ = try await client.withConnection { try await $0.query(PostgresQuery(unsafeSQL: sql), logger: TestDatabase.logger) }
            }
            func subscription(_ id: String) -> String {
                """
                INSERT INTO subscriptions (original_transaction_id, account_id, product_id, environment, status, will_renew, is_trial,
                    ownership, latest_transaction_id, last_event_type, last_signed_date, billing_period, store)
                VALUES ('\(id)', '\(account)', 'pro.monthly', 'Sandbox', 'active', true, false, 'PURCHASED', '\(id)', 'SUBSCRIBED', 0,
                    '\(id):1', 'app_store')
                """
            }

            #expect(try await !hasMore(), "nothing at all")
            try await run(subscription("s-1"))
            try await run(
                "INSERT INTO credit_buckets (key, meter, kind, account_id, valid_from) VALUES ('topup:t-1', 'ai_requests', 'topup', '\(account)', now() - interval '1 day')"
            )
            try await run(
                "INSERT INTO credit_buckets (key, meter, kind, account_id, valid_from, valid_until) VALUES ('daily:old', 'ai_requests', 'daily', '\(account)', now() - interval '2 days', now() - interval '1 day')"
            )
            #expect(try await !hasMore(), "the subscription itself, a live top-up and a closed daily bucket")

            try await run(subscription("s-2"))
            #expect(try await hasMore(), "another subscription")
            try await run("DELETE FROM subscriptions WHERE original_transaction_id = 's-2'")

            try await run(
                "INSERT INTO entitlement_sources (id, kind, store, account_id, tier, starts_at, ended_at) VALUES ('g-old', 'grant', 'app_store', '\(account)', 'pro', now() - interval '2 days', now() - interval '1 day')"
            )
            #expect(try await !hasMore(), "a grant ended")
            try await run(
                "INSERT INTO entitlement_sources (id, kind, store, account_id, tier, starts_at) VALUES ('g-1', 'grant', 'app_store', '\(account)', 'pro', now())"
            )
            #expect(try await hasMore(), "a grant in force")
            try await run("DELETE FROM entitlement_sources WHERE id = 'g-1'")

            try await run(
                "INSERT INTO credit_buckets (key, meter, kind, account_id, valid_from) VALUES ('topup:later', 'ai_requests', 'topup', '\(account)', now() + interval '1 day')"
            )
            #expect(try await hasMore(), "a bucket of its own opening later")
            #expect(try await hasMore(nil), "no owner")
        }
    }
}
