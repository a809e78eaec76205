import Credits
import Foundation
import Persistence
import PostgresNIO
import Subscriptions
import Testing

@testable import IntegrationSupport

/// Where a hold's credits can go back, decided by `CreditHold.destinations` from what a group's read
/// (`lock_accounts_read_hold_group`, sql/0040) finds in the ledger rows posted after the hold and, for an App Store
/// window whose refund found nothing left, in its subscription's row (sql/0060) — the SQL side of docs/credits.md's
/// "Where credits go back", against rows shaped as the credit rules write them (SubscriptionCredits+Refunds,
/// TopUpCredits) and the lifecycle stores them, on real PostgreSQL.
@Suite("Hold destinations: refunds, reversals and carry-overs after a hold")
struct HoldDestinationTests {
    /// What the group's read (`lock_accounts_read_hold_group`) says became of each bucket `hold` took from.
    static func since(_ hold: UUID, harness: StorekeeperHarness) async throws -> [CreditHold.BucketSince] {
        let read = try await harness.client.withTransaction(logger: TestDatabase.logger) {
            try await CreditHoldStore(logger: TestDatabase.logger).lockAccountsReadHoldsAndStatus(
                accounts: [], ids: [hold], keys: [], taking: [], at: Date(), on: $0
            ).holds
        }
        #expect(read.count == 1 && read.first?.hold.id == hold)
        return read.first?.since ?? []
    }

    /// The same for a spend's reversal (`credit_buckets_since`), of the window `cycle:s:p1:ai` since `hold`'s first debit.
    static func spendSince(_ hold: UUID, harness: StorekeeperHarness) async throws -> [CreditHold.BucketSince] {
        let text = try await harness.client.query(
            "SELECT credit_buckets_since(\(CreditHold.debitKey(hold, 0)), ARRAY['cycle:s:p1:ai'])::text", logger: TestDatabase.logger
        ).collect().first?.decode(String.self)
        return try JSONDecoder().decode([CreditHold.BucketSince].self, from: Data((text ?? "[]").utf8))
    }

    @Test(
        "a top-up's bucket takes its credits back whatever was refunded from it; a window refunded since takes them back for the refund to take while it is the hold's account's (else they lapse), until the refund is reversed; one clawed back from stays open with its claim; an upgrade's carry-over is followed while it stands"
    )
    func rules() async throws {
        try await StorekeeperHarness.run(worker: false) { harness in
            let hold = UUID()
            func post(_ key: String, _ bucket: String, _ delta: Int) async throws {
                try await harness.client.query(
                    "INSERT INTO credit_ledger (operation_key, bucket, delta, reason) VALUES (\(key), \(bucket), \(delta), 'test')",
                    logger: TestDatabase.logger)
            }
            try await harness.client.query(
                """
                INSERT INTO credit_buckets (key, meter, kind, original_transaction_id, billing_period, account_id, valid_from, valid_until)
                VALUES ('cycle:s:p1:ai', 'ai_requests', 'cycle', 's', 'p1', NULL, now() - interval '1 day', now() + interval '29 days'),
                       ('topup:a:ai', 'ai_requests', 'topup', NULL, NULL, 'a', now() - interval '1 day', NULL)
                """, logger: TestDatabase.logger)
            try await post("grant:p1:ai", "cycle:s:p1:ai", 100)
            try await post("topup:sale-a:ai", "topup:a:ai", 100)
            try await post("topup:sale-b:ai", "topup:a:ai", 100)
            try await post(CreditHold.debitKey(hold, 0), "cycle:s:p1:ai", -5)
            try await post(CreditHold.debitKey(hold, 1), "topup:a:ai", -3)
            try await harness.client.query(
                """
                INSERT INTO credit_holds (id, account_id, idempotency_key, meter, amount, debits, created_at, expires_at)
                VALUES (\(hold), 'a', 'k', 'ai_requests', 8,
                    '[{"bucket": "cycle:s:p1:ai", "amount": 5}, {"bucket": "topup:a:ai", "amount": 3}]', now(), now() + interval '1 hour')
                """, logger: TestDatabase.logger)
            let buckets = ["cycle:s:p1:ai", "topup:a:ai"]
            func since() async throws -> [CreditHold.BucketSince] { try await Self.since(hold, harness: harness) }
            // The same read for a spend's reversal (credit_buckets_since), of the window.
            func spendSince() async throws -> [CreditHold.BucketSince] { try await Self.spendSince(hold, harness: harness) }
            func destinations(open: Set<String> = Set(buckets)) async throws -> [String: String] {
                CreditHold.destinations(try await since(), open: open, account: try #require(AccountID("a")))
            }
            #expect(try await destinations() == ["cycle:s:p1:ai": "cycle:s:p1:ai", "topup:a:ai": "topup:a:ai"])
            #expect(try await destinations(open: ["topup:a:ai"]) == ["topup:a:ai": "topup:a:ai"], "a window no longer live takes nothing back")
            // Another top-up purchase refunded: its own credits go; the held ones were not its.
            try await post("refund:sale-b:topup:a:ai", "topup:a:ai", -100)
            #expect(try await destinations()["topup:a:ai"] == "topup:a:ai")
            // The period refunded while held: the held credits go back to the window, where the refund takes them (under
            // its first row's key, sql/0059) — while the window is the hold's account's; else they lapse.
            try await post("refund:p1:1700000000000:cycle:s:p1:ai", "cycle:s:p1:ai", -95)
            #expect(try await destinations()["cycle:s:p1:ai"] == nil, "no account holds the window's subscription")
            try await harness.client.query(
                """
                INSERT INTO subscriptions (original_transaction_id, account_id, product_id, environment, status, will_renew, auto_renew_product_id,
                    purchase_date, expires_at, is_trial, ownership, latest_transaction_id, last_event_type, last_signed_date, last_event_id, billing_period)
                VALUES ('s', 'a', 'pro.monthly', 'Sandbox', 'revoked', false, 'pro.monthly', now() - interval '1 day', now() + interval '29 days',
                    false, 'PURCHASED', 's', 'REFUND', 0, '', 'p1')
                """, logger: TestDatabase.logger)
            #expect(try await destinations(open: ["topup:a:ai"])["cycle:s:p1:ai"] == "cycle:s:p1:ai", "closed by the refund, still the account's")
            try await post("refund:p1:1700000000000:cycle:s:p1:ai:2", "cycle:s:p1:ai", -1)
            let window = try #require(try await since().first { $0.bucket == "cycle:s:p1:ai" })
            #expect(window.refundedBy == "refund:p1:1700000000000:cycle:s:p1:ai" && window.owner == "a", "the refund's first row, \(window)")
            #expect(try await spendSince().first?.refundedBy == window.refundedBy, "a spend's reversal reads the same")
            func hand(to account: String) async throws {
                try await harness.client.query(
                    "UPDATE subscriptions SET account_id = \(account) WHERE original_transaction_id = 's'", logger: TestDatabase.logger)
            }
            try await hand(to: "b")
            #expect(try await destinations()["cycle:s:p1:ai"] == nil, "the subscription moved to another account")
            try await hand(to: "a")
            try await post("reversed:refund:p1:1700000000000:cycle:s:p1:ai", "cycle:s:p1:ai", 95)
            try await post("reversed:refund:p1:1700000000000:cycle:s:p1:ai:2", "cycle:s:p1:ai", 1)
            #expect(try await since().first { $0.bucket == "cycle:s:p1:ai" }?.refundedBy == nil)
            #expect(try await destinations()["cycle:s:p1:ai"] == "cycle:s:p1:ai")
            #expect(try await destinations(open: ["topup:a:ai"])["cycle:s:p1:ai"] == nil, "reversed, a window no longer live takes nothing back")
            // An earlier period's prorated refund claws back from the window and claims what is held (sql/0057): the
            // window stays open to the held credits, which pay the claim first.
            try await post("claim:clawback:p0:1700000000002:cycle:s:p1:ai", "cycle:s:p1:ai", 2)
            try await post("clawback:p0:1700000000002:cycle:s:p1:ai", "cycle:s:p1:ai", -97)
            #expect(try await destinations()["cycle:s:p1:ai"] == "cycle:s:p1:ai", "a claw-back does not close the window")
            // A spend's reversal reads the claw-back as a hold's end does: no refund, a claim on the window.
            let spendRead = try await spendSince()
            #expect(spendRead.map(\.refunded) == [false] && spendRead.first?.claims?.map(\.outstanding) == [2], "\(spendRead)")
            #expect(spendRead.first?.owner == "a" && spendRead.first?.kind == "cycle", "\(spendRead)")
            #expect(
                CreditHold.claims(try await since())["cycle:s:p1:ai"] == [.init(key: "claim:clawback:p0:1700000000002:cycle:s:p1:ai", outstanding: 2)]
            )
            try await post("reversed:clawback:p0:1700000000002:cycle:s:p1:ai", "cycle:s:p1:ai", 97)
            try await post("reversed:claim:clawback:p0:1700000000002:cycle:s:p1:ai", "cycle:s:p1:ai", -2)
            #expect(CreditHold.claims(try await since())["cycle:s:p1:ai"] == nil, "a reversed claw-back's claim is closed")
            // An upgrade carries the window's unspent credits to a top-up: the held ones follow them there…
            try await harness.client.query(
                "INSERT INTO credit_buckets (key, meter, kind, account_id, valid_from) VALUES ('topup:a:carried', 'ai_requests', 'topup', 'a', now())",
                logger: TestDatabase.logger)
            try await post("carry:p2:cycle:s:p1:ai:out", "cycle:s:p1:ai", -95)
            try await post("carry:p2:cycle:s:p1:ai:in", "topup:a:carried", 95)
            #expect(try await destinations(open: ["topup:a:ai"])["cycle:s:p1:ai"] == "topup:a:carried")
            // A pack refunded from that top-up since, short: the window's held credits going there pay its claim.
            try await post("claim:refund:sx:topup:a:carried", "topup:a:carried", 20)
            #expect(CreditHold.claims(try await since())["cycle:s:p1:ai"] == [.init(key: "claim:refund:sx:topup:a:carried", outstanding: 20)])
            #expect(try await since().first { $0.bucket == "cycle:s:p1:ai" }?.carryTakenBy == nil, "no refund took the carry")
            // A refund of the upgrade takes the carry back: the held credits still follow it, for that refund to take
            // under its row's key (sql/0064; before, they lapsed, and still did once the refund was reversed)…
            let take = "refund:p2:1700000000001:carry:p2:cycle:s:p1:ai:in"
            try await post(take, "topup:a:carried", -95)
            #expect(try await destinations(open: ["topup:a:ai"])["cycle:s:p1:ai"] == "topup:a:carried")
            #expect(try await since().first { $0.bucket == "cycle:s:p1:ai" }?.carryTakenBy == take)
            #expect(try await spendSince().first?.carryTakenBy == take, "a spend given back reads it too")
            // …until the refund is reversed: the carry is the customer's again.
            try await post("reversed:\(take)", "topup:a:carried", 95)
            #expect(try await since().first { $0.bucket == "cycle:s:p1:ai" }?.carryTakenBy == nil, "the reversed refund takes nothing")
            #expect(try await destinations(open: ["topup:a:ai"])["cycle:s:p1:ai"] == "topup:a:carried")
            // A second refund at another date: its row, the last that stands, takes (a pending carry's take is two rows
            // that net to nothing, the take's own last).
            try await post("refund:p2:1700000000009:pending:carry:p2:cycle:s:p1:ai:in", "topup:a:carried", 7)
            try await post("refund:p2:1700000000009:carry:p2:cycle:s:p1:ai:in", "topup:a:carried", -7)
            #expect(try await since().first { $0.bucket == "cycle:s:p1:ai" }?.carryTakenBy == "refund:p2:1700000000009:carry:p2:cycle:s:p1:ai:in")
            // That refund changed kind (its take given back) and back: it takes again under `<stamp>:1:`, which the read
            // names by the key's end as it names the first (SubscriptionCredits' carryTakeKeys).
            try await post("reversed:refund:p2:1700000000009:carry:p2:cycle:s:p1:ai:in", "topup:a:carried", 7)
            try await post("reversed:refund:p2:1700000000009:pending:carry:p2:cycle:s:p1:ai:in", "topup:a:carried", -7)
            #expect(try await since().first { $0.bucket == "cycle:s:p1:ai" }?.carryTakenBy == nil, "given back, it takes nothing")
            try await post("refund:p2:1700000000009:1:pending:carry:p2:cycle:s:p1:ai:in", "topup:a:carried", 7)
            try await post("refund:p2:1700000000009:1:carry:p2:cycle:s:p1:ai:in", "topup:a:carried", -7)
            #expect(try await since().first { $0.bucket == "cycle:s:p1:ai" }?.carryTakenBy == "refund:p2:1700000000009:1:carry:p2:cycle:s:p1:ai:in")
            #expect(try await spendSince().first?.carryTakenBy == "refund:p2:1700000000009:1:carry:p2:cycle:s:p1:ai:in")
            // A carry reversed (a stale copy of the upgrade, or one ended before sql/0064) is not followed.
            try await post("reversed:carry:p2:cycle:s:p1:ai:out", "cycle:s:p1:ai", 1)
            #expect(try await destinations(open: ["topup:a:ai"])["cycle:s:p1:ai"] == nil)
        }
    }

    @Test(
        "an App Store window whose refund found nothing left is read as refunded, under the key the credit rules give that refund's removal (refund:<period>:<revocation in ms>:<bucket>, from the stored period and revoked_at, to the millisecond); not for another period, another store, a subscription not refunded, or a top-up"
    )
    func refundThatFoundNothingLeft() async throws {
        try await StorekeeperHarness.run(worker: false) { harness in
            let hold = UUID()
            func query(_ text: PostgresQuery) async throws { try await harness.client.query(text, logger: TestDatabase.logger) }
            // The month's window, closed by the refund a minute ago, with all its 10 credits held, and a top-up's 3.
            try await query(
                """
                INSERT INTO credit_buckets (key, meter, kind, original_transaction_id, billing_period, account_id, valid_from, valid_until)
                VALUES ('cycle:s:p1:ai', 'ai_requests', 'cycle', 's', 'p1', NULL, now() - interval '1 day', now() - interval '1 minute'),
                       ('topup:a:ai', 'ai_requests', 'topup', NULL, NULL, 'a', now() - interval '1 day', NULL)
                """)
            try await query("INSERT INTO credit_ledger (operation_key, bucket, delta, reason) VALUES ('grant:p1:ai', 'cycle:s:p1:ai', 10, 'test')")
            try await query("INSERT INTO credit_ledger (operation_key, bucket, delta, reason) VALUES ('topup:sale-a:ai', 'topup:a:ai', 3, 'test')")
            try await query(
                """
                INSERT INTO credit_ledger (operation_key, bucket, delta, reason)
                VALUES (\(CreditHold.debitKey(hold, 0)), 'cycle:s:p1:ai', -10, 'hold'), (\(CreditHold.debitKey(hold, 1)), 'topup:a:ai', -3, 'hold')
                """)
            try await query(
                """
                INSERT INTO credit_holds (id, account_id, idempotency_key, meter, amount, debits, created_at, expires_at)
                VALUES (\(hold), 'a', 'k', 'ai_requests', 13,
                    '[{"bucket": "cycle:s:p1:ai", "amount": 10}, {"bucket": "topup:a:ai", "amount": 3}]', now(), now() + interval '1 hour')
                """)
            try await query(
                """
                INSERT INTO subscriptions (original_transaction_id, account_id, product_id, environment, status, will_renew, auto_renew_product_id,
                    purchase_date, expires_at, is_trial, ownership, latest_transaction_id, last_event_type, last_signed_date, last_event_id, billing_period,
                    store)
                VALUES ('s', 'a', 'pro.monthly', 'Sandbox', 'active', true, 'pro.monthly', now() - interval '1 day', now() + interval '29 days',
                    false, 'PURCHASED', 's', 'SUBSCRIBED', 0, '', 'p1', 'app_store')
                """)
            func since() async throws -> [String: CreditHold.BucketSince] {
                Dictionary(uniqueKeysWithValues: try await Self.since(hold, harness: harness).map { ($0.bucket, $0) })
            }
            func spendSince() async throws -> CreditHold.BucketSince? { try await Self.spendSince(hold, harness: harness).first }
            let account = try #require(AccountID("a"))
            func destinations() async throws -> [String: String] {
                CreditHold.destinations(Array(try await since().values), open: ["topup:a:ai"], account: account)
            }
            #expect(try await since()["cycle:s:p1:ai"]?.refunded == false, "not refunded")
            #expect(try await destinations() == ["topup:a:ai": "topup:a:ai"], "a closed window, not refunded, takes nothing back")
            // Refunded at dates whose milliseconds a double cannot hold exactly, as Apple's revocationDate arrives and
            // the lifecycle stores it (a Date bound as timestamptz).
            let dates: [Int64] = [1_700_000_000_000, 1_700_000_000_001, 1_733_300_000_123, 1_796_369_118_845, 1_796_369_118_999, 4_102_444_799_999]
            for milliseconds in dates {
                let revokedAt = Date(timeIntervalSince1970: Double(milliseconds) / 1000)
                try await query("UPDATE subscriptions SET status = 'refunded', revoked_at = \(revokedAt) WHERE original_transaction_id = 's'")
                let key = "refund:p1:\(milliseconds):cycle:s:p1:ai"
                let read = try await since()
                #expect(read["cycle:s:p1:ai"]?.refunded == true && read["cycle:s:p1:ai"]?.refundedBy == key, "\(milliseconds): \(read)")
                #expect(read["topup:a:ai"]?.refunded == false && read["topup:a:ai"]?.refundedBy == nil, "a top-up is not the period's")
                #expect(try await spendSince()?.refundedBy == key, "\(milliseconds): a spend's reversal reads the same")
                #expect(try await destinations() == ["cycle:s:p1:ai": "cycle:s:p1:ai", "topup:a:ai": "topup:a:ai"], "\(milliseconds)")
            }
            // Revoked (Family Sharing) the same; a period not the window's, another store, or the stamp gone: nothing.
            try await query("UPDATE subscriptions SET status = 'revoked' WHERE original_transaction_id = 's'")
            #expect(try await since()["cycle:s:p1:ai"]?.refundedBy == "refund:p1:4102444799999:cycle:s:p1:ai")
            let others: [(String, String)] = [
                ("billing_period = 'p2'", "another period in force"), ("store = 'stripe'", "a Stripe subscription's revoked_at is when access ended"),
                ("revoked_at = NULL", "no revocation date stored"), ("status = 'expired'", "not refunded"),
            ]
            for (change, why) in others {
                try await query(PostgresQuery(unsafeSQL: "UPDATE subscriptions SET \(change) WHERE original_transaction_id = 's'"))
                #expect(try await since()["cycle:s:p1:ai"]?.refundedBy == nil, "\(why)")
                #expect(try await destinations()["cycle:s:p1:ai"] == nil, "\(why)")
                try await query(
                    """
                    UPDATE subscriptions SET billing_period = 'p1', store = 'app_store', status = 'revoked', revoked_at = to_timestamp(4102444799.999)
                    WHERE original_transaction_id = 's'
                    """)
                #expect(try await since()["cycle:s:p1:ai"]?.refundedBy == "refund:p1:4102444799999:cycle:s:p1:ai", "\(why), set back")
            }
            // The subscription moved to another account: the read names the refund, the rule takes nothing for this one.
            try await query("UPDATE subscriptions SET account_id = 'b' WHERE original_transaction_id = 's'")
            #expect(try await since()["cycle:s:p1:ai"]?.owner == "b")
            #expect(try await destinations()["cycle:s:p1:ai"] == nil, "another account's window")
        }
    }

    @Test(
        "claims on a bucket read with a hold: those made after it, unpaid, oldest first, less their payments; none once paid or its refund reversed")
    func claims() async throws {
        try await StorekeeperHarness.run(worker: false) { harness in
            let store = CreditHoldStore(logger: TestDatabase.logger)
            let hold = UUID()
            func post(_ key: String, _ delta: Int, bucket: String = "topup:a:ai") async throws {
                try await harness.client.query(
                    "INSERT INTO credit_ledger (operation_key, bucket, delta, reason) VALUES (\(key), \(bucket), \(delta), 'test')",
                    logger: TestDatabase.logger)
            }
            try await harness.client.query(
                "INSERT INTO credit_buckets (key, meter, kind, account_id, valid_from) VALUES ('topup:a:ai', 'ai_requests', 'topup', 'a', now() - interval '1 day'), ('topup:a:aix', 'aix', 'topup', 'a', now() - interval '1 day')",
                logger: TestDatabase.logger)
            for sale in ["s0", "s1", "s2"] { try await post("topup:\(sale)", 100) }
            // A refund before the hold claimed 10: not the hold's to pay.
            try await post("refund:s0:topup:a:ai", -100)
            try await post("claim:refund:s0:topup:a:ai", 10)
            try await post(CreditHold.debitKey(hold, 0), -150)
            try await harness.client.query(
                """
                INSERT INTO credit_holds (id, account_id, idempotency_key, meter, amount, debits, created_at, expires_at)
                VALUES (\(hold), 'a', 'k', 'ai_requests', 150, '[{"bucket": "topup:a:ai", "amount": 150}]', now(), now() + interval '1 hour')
                """, logger: TestDatabase.logger)
            func claims() async throws -> [HoldSettlement.Claim] {
                let read = try await harness.client.withTransaction(logger: TestDatabase.logger) {
                    try await store.lockAccountsReadHoldsAndStatus(accounts: [], ids: [hold], keys: [], taking: [], at: Date(), on: $0).holds
                }
                return CreditHold.claims(read.first?.since ?? [])["topup:a:ai"] ?? []
            }
            #expect(try await claims() == [])
            try await post("refund:s1:topup:a:ai", -100)
            try await post("claim:refund:s1:topup:a:ai", 60)
            try await post("refund:s2:topup:a:ai", -100)
            try await post("claim:refund:s2:topup:a:ai", 100)
            // Another bucket's claim, whose key the first's is a prefix of, is not this bucket's.
            try await post("claim:refund:s9:topup:a:aix", 7, bucket: "topup:a:aix")
            #expect(
                try await claims() == [
                    .init(key: "claim:refund:s1:topup:a:ai", outstanding: 60), .init(key: "claim:refund:s2:topup:a:ai", outstanding: 100),
                ])
            // Paid in part by another hold's return: less that.
            try await post("claim:refund:s1:topup:a:ai:paid:hold-return:other:0", -45)
            #expect(try await claims().first == .init(key: "claim:refund:s1:topup:a:ai", outstanding: 15))
            try await post("claim:refund:s1:topup:a:ai:paid:hold-return:other:1", -15)
            #expect(try await claims().map(\.key) == ["claim:refund:s2:topup:a:ai"], "paid whole")
            // The second refund reversed: its claim is closed.
            try await post("reversed:refund:s2:topup:a:ai", 100)
            try await post("reversed:claim:refund:s2:topup:a:ai", -100)
            #expect(try await claims() == [])
        }
    }

    @Test(
        "a hold's read says a bucket is open exactly when live_credit_buckets lists it for the hold's account: by time, and by who holds the subscription now"
    )
    func open() async throws {
        try await StorekeeperHarness.run(worker: false) { harness in
            let store = CreditHoldStore(logger: TestDatabase.logger)
            let hold = UUID()
            try await harness.client.withConnection { try await LiveBucketsReadTests.store(accounts: 1...2, on: $0) }
            // A window of account-1's that ended yesterday, one that opens tomorrow, two that end and start at `edge`
            // (a window is open from its start, up to but not at its end), and the window of a subscription no account
            // holds.
            let edge = Date().addingTimeInterval(3 * 86_400)
            try await harness.client.query(
                """
                INSERT INTO credit_buckets (key, meter, kind, account_id, valid_from, valid_until)
                VALUES ('entitlement:past', 'ai_requests', 'entitlement', 'account-1', now() - interval '2 days', now() - interval '1 day'),
                       ('entitlement:next', 'ai_requests', 'entitlement', 'account-1', now() + interval '1 day', now() + interval '31 days'),
                       ('entitlement:ends', 'ai_requests', 'entitlement', 'account-1', now() - interval '1 day', \(edge)),
                       ('entitlement:starts', 'ai_requests', 'entitlement', 'account-1', \(edge), NULL)
                """, logger: TestDatabase.logger)
            try await harness.client.query(
                """
                INSERT INTO subscriptions (original_transaction_id, account_id, product_id, environment, status, will_renew, auto_renew_product_id,
                    purchase_date, expires_at, is_trial, ownership, latest_transaction_id, last_event_type, last_signed_date, last_event_id, billing_period)
                VALUES ('s-unlinked', NULL, 'pro.monthly', 'Sandbox', 'active', true, 'pro.monthly', now() - interval '1 day', now() + interval '29 days',
                    false, 'PURCHASED', 's-unlinked', 'SUBSCRIBED', 0, '', 's-unlinked')
                """, logger: TestDatabase.logger)
            try await harness.client.query(
                """
                INSERT INTO credit_buckets (key, meter, kind, original_transaction_id, billing_period, valid_from, valid_until)
                VALUES ('cycle:s-unlinked:m0', 'ai_requests', 'cycle', 's-unlinked', 's-unlinked', now() - interval '1 day', now() + interval '29 days')
                """, logger: TestDatabase.logger)
            // The hold took from every one of them, another account's top-up too (the read must not take it for account-1's).
            let buckets = [
                "cycle:s-1:m0", "topup:account-1", "topup:account-2", "cycle:s-2:m0", "entitlement:past", "entitlement:next", "entitlement:ends",
                "entitlement:starts", "cycle:s-unlinked:m0",
            ]
            for (index, bucket) in buckets.enumerated() {
                try await harness.client.query(
                    "INSERT INTO credit_ledger (operation_key, bucket, delta, reason) VALUES (\(CreditHold.debitKey(hold, index)), \(bucket), -1, 'hold')",
                    logger: TestDatabase.logger)
            }
            // And a debit naming a bucket no longer stored: it lapses (not open), as a bucket live_credit_buckets cannot list.
            let debits = "[" + (buckets + ["gone"]).map { #"{"bucket": "\#($0)", "amount": 1}"# }.joined(separator: ", ") + "]"
            try await harness.client.query(
                """
                INSERT INTO credit_holds (id, account_id, idempotency_key, meter, amount, debits, created_at, expires_at)
                VALUES (\(hold), 'account-1', 'k', 'ai_requests', \(buckets.count + 1), \(debits)::jsonb, now(), now() + interval '1 hour')
                """, logger: TestDatabase.logger)
            @discardableResult func check(at time: Date, _ comment: Comment) async throws -> Set<String> {
                let (read, live) = try await harness.client.withTransaction(logger: TestDatabase.logger) { connection in
                    let read = try await store.lockAccountsReadHoldsAndStatus(
                        accounts: [], ids: [hold], keys: [], taking: [], at: time, on: connection)
                    var live: Set<String> = []
                    for try await key in try await connection.query(
                        "SELECT bucket_key FROM live_credit_buckets(ARRAY['account-1'], \(time), false)", logger: TestDatabase.logger
                    ).decode(String.self) { live.insert(key) }
                    return (read.holds.first?.since ?? [], live)
                }
                #expect(Set(read.map(\.bucket)) == Set(buckets + ["gone"]), comment)
                let open = Set(read.filter { $0.open == true }.map(\.bucket))
                #expect(open == live.intersection(buckets), comment)
                return open
            }
            #expect(try await check(at: Date(), "now") == ["cycle:s-1:m0", "topup:account-1", "entitlement:ends"])
            #expect(try await check(at: edge, "at the edge") == ["cycle:s-1:m0", "topup:account-1", "entitlement:next", "entitlement:starts"])
            try await check(at: Date().addingTimeInterval(2 * 86_400), "in two days: the next window open")
            #expect(try await check(at: Date().addingTimeInterval(40 * 86_400), "past the cycle's end") == ["topup:account-1", "entitlement:starts"])
            // The subscription moves to account-2: its window is no longer account-1's to take credits back to.
            try await harness.client.query(
                "UPDATE subscriptions SET account_id = 'account-2' WHERE original_transaction_id = 's-1'", logger: TestDatabase.logger)
            #expect(try await check(at: Date(), "after the transfer") == ["topup:account-1", "entitlement:ends"])
            try await harness.client.query(
                "UPDATE subscriptions SET account_id = 'account-1' WHERE original_transaction_id = 's-2'", logger: TestDatabase.logger)
            try await check(at: Date(), "after account-2's moved to account-1")
        }
    }
}
