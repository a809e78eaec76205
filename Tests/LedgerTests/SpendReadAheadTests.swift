import Foundation
import HTTPTypes
import HummingbirdTesting
import Persistence
import PostgresNIO
import Subscriptions
import Testing

@testable import Application
@testable import IntegrationSupport

/// A first spend from an account reads its pages while it waits for its group (sql/0052, ``SpendReadAhead``): what
/// the group will read and write, on a connection of its own, with no lock taken and nothing written; only accounts
/// that have not spent lately do it (``RecentSpenders``), a few at once, and no spend waits for it.
@Suite("Reading a spend's pages ahead")
struct SpendReadAheadTests {
    @Test(
        "finds the stored answer, the debits' place, the status inputs and each of its meter's live buckets' last ledger entry, key and subscription, by index, beside a group holding the account's lock, writing nothing"
    )
    func readsWhatTheGroupReads() async throws {
        try await TestDatabase.withMigratedClient(maximumConnections: 2) { client in
            let requests = UsageRequests(logger: TestDatabase.logger)
            try await client.withConnection { connection in
                try await LiveBucketsReadTests.store(accounts: 1...2_000, on: connection)
                try await connection.query(
                    """
                    INSERT INTO usage_requests (account_id, idempotency_key, meter, amount, outcome, answer)
                    VALUES ('account-7', 'k1', 'ai_requests', 1, 'spent', '{}')
                    """, logger: TestDatabase.logger)
                try await connection.query("ANALYZE", logger: TestDatabase.logger)
            }
            let account = try #require(AccountID("account-7"))
            func request(_ key: String, of account: AccountID) -> UsageRequests.Request {
                UsageRequests.Request(account: account, meter: "ai_requests", amount: 1, idempotencyKey: key)
            }

            // A group of spends of account-7 in flight: its transaction holds the account's lock.
            try await client.withTransaction(logger: TestDatabase.logger) { group in
                _ = try await requests.lockAccountsAndReadAnswers([request("k2", of: account)], on: group)
                try await client.withTransaction(logger: TestDatabase.logger) { connection in
                    // The answer; the subscription and its two live buckets, each bucket's last ledger entry and its
                    // key, and the cycle bucket's subscription by key. No debit of k1 is posted yet.
                    #expect(try await requests.readPagesAhead(for: request("k1", of: account), at: Date(), on: connection) == 1 + 3 + 2 + 2 + 1)
                    #expect(try await requests.readPagesAhead(for: request("k2", of: account), at: Date(), on: connection) == 3 + 2 + 2 + 1)
                    let exports = UsageRequests.Request(account: account, meter: "exports", amount: 1, idempotencyKey: "k2")
                    #expect(try await requests.readPagesAhead(for: exports, at: Date(), on: connection) == 3, "no bucket of that meter to look up")
                    let nobody = try #require(AccountID("account-none"))
                    #expect(try await requests.readPagesAhead(for: request("k1", of: nobody), at: Date(), on: connection) == 0)
                    let written = try await connection.query("SELECT pg_current_xact_id_if_assigned()::text", logger: TestDatabase.logger)
                    for try await id in written.decode(String?.self) { #expect(id == nil, "reading ahead wrote something") }

                    // The second call: the first on a connection reads the catalogue to plan the function's statements.
                    var blocks: [Int] = []
                    for _ in 0..<2 {
                        blocks.append(
                            try await LiveBucketsReadTests.blocksTouched(
                                by: "SELECT read_spend_pages_ahead('account-777', 'k', 'ai_requests', 'spend:11:account-777:k', now())",
                                on: connection))
                    }
                    #expect(blocks.count == 2)
                    #expect((blocks.last ?? 0) > 0)
                    #expect((blocks.last ?? .max) < 45, "reading account-777's pages ahead touched \(blocks) blocks")
                }
            }
            try await client.withConnection { connection in
                let debit = UsageRequests.debitKeyPrefix(account: account, idempotencyKey: "k2", micros: nil) + ":0"
                try await connection.query(
                    "INSERT INTO credit_ledger (operation_key, bucket, delta, reason) VALUES (\(debit), 'topup:account-7', -1, 'usage')",
                    logger: TestDatabase.logger)
                #expect(
                    try await requests.readPagesAhead(for: request("k2", of: account), at: Date(), on: connection) == 1 + 3 + 2 + 2 + 1,
                    "the first debit's key, found")
            }
        }
    }

    @Test("the read-ahead touches each index the group reads or writes an entry in")
    func touchesTheGroupsIndexes() async throws {
        try await TestDatabase.withMigratedClient(maximumConnections: 1) { client in
            try await client.withConnection { connection in
                try await LiveBucketsReadTests.store(accounts: 1...200, on: connection)
                func touched() async throws -> [String: Int] {
                    _ = try await connection.query("SELECT pg_stat_clear_snapshot()", logger: TestDatabase.logger)
                    var blocks: [String: Int] = [:]
                    for try await (name, count) in try await connection.query(
                        "SELECT indexrelname::text, (idx_blks_hit + idx_blks_read)::int FROM pg_statio_user_indexes", logger: TestDatabase.logger
                    ).decode((String, Int).self) { blocks[name] = count }
                    return blocks
                }
                _ = try await connection.query("SELECT pg_stat_force_next_flush()", logger: TestDatabase.logger)
                let before = try await touched()
                let request = UsageRequests.Request(
                    account: try #require(AccountID("account-77")), meter: "ai_requests", amount: 1, idempotencyKey: "k")
                try await UsageRequests(logger: TestDatabase.logger).readPagesAhead(for: request, at: Date(), on: connection)
                _ = try await connection.query("SELECT pg_stat_force_next_flush()", logger: TestDatabase.logger)
                let after = try await touched()
                let read = Set(after.keys.filter { (after[$0] ?? 0) > (before[$0] ?? 0) })
                let groups: Set<String> = [
                    "usage_requests_pkey", "credit_ledger_operation_key_key", "credit_ledger_bucket", "credit_buckets_pkey",
                    "credit_bucket_balances_pkey", "subscriptions_pkey", "subscriptions_account", "credit_buckets_subscription",
                    "credit_buckets_account",
                ]
                #expect(groups.subtracting(read).isEmpty, "not read ahead: \(groups.subtracting(read).sorted())")
            }
        }
    }

    @Test("a spend never waits for its read-ahead; a repeated spend reads none ahead; at most 8 run at once; one that fails fails no spend")
    func spendsDoNotWaitForReadAheads() async throws {
        try await StorekeeperHarness.run(worker: false, environment: CreditHoldTests.environment) { harness in
            @Sendable func run(_ sql: String) async throws {
                try await harness.client.query(PostgresQuery(unsafeSQL: sql), logger: TestDatabase.logger)
            }
            // Read-aheads that wait for an advisory lock the test holds (the groups never take it) — never longer than
            // 30 s, so that a failure below ends the test instead of leaving a read the pool's shutdown waits for.
            try await run(
                """
                CREATE OR REPLACE FUNCTION read_spend_pages_ahead(spend_account text, spend_key text, spend_meter text, debit_key_prefix text, at_time timestamptz)
                RETURNS bigint LANGUAGE plpgsql VOLATILE SET lock_timeout = '30s' AS $$
                BEGIN PERFORM pg_advisory_lock_shared(5252); PERFORM pg_advisory_unlock_shared(5252); RETURN 0; END $$
                """)
            // A read-ahead still waiting for a connection when its spend is answered is given up (by design): the pool
            // opens enough connections first, so that each read-ahead below finds one at once however busy the machine.
            try await withThrowingTaskGroup(of: Void.self) { group in
                for _ in 0..<14 {
                    group.addTask {
                        try await harness.client.withConnection { _ = try await $0.query("SELECT pg_sleep(0.2)", logger: TestDatabase.logger) }
                    }
                }
                try await group.waitForAll()
            }
            let waiting = """
                SELECT count(*) FROM pg_stat_activity
                WHERE datname = current_database() AND wait_event = 'advisory' AND query LIKE '%read_spend_pages_ahead%'
                """
            try await harness.withHTTP { client in
                func spend(_ account: String, key: String) async throws {
                    let answer = try await SpendReversalTests.spend(client, account, "ai_requests", 1, key: key)
                    #expect(answer.status == .ok, "\(account) \(key): \(String(buffer: answer.body))")
                }
                // A lock of the holder's transaction: whatever fails below, the rollback releases it.
                try await harness.client.withTransaction(logger: TestDatabase.logger) { holder in
                    try await holder.query("SELECT pg_advisory_xact_lock(5252)", logger: TestDatabase.logger)
                    try await spend("ahead-a", key: "1")
                    try await eventually("the first spend's read-ahead, waiting") { try await harness.count(waiting) == 1 }
                    try await spend("ahead-a", key: "2")
                    try await spend("ahead-b", key: "1")
                    try await eventually("ahead-b's read-ahead, waiting") { try await harness.count(waiting) >= 2 }
                    #expect(try await harness.count(waiting) == 2, "ahead-a's second spend read nothing ahead")
                    for index in 1...8 { try await spend("ahead-c\(index)", key: "1") }
                    try await eventually("eight read-aheads, waiting") { try await harness.count(waiting) >= 8 }
                    #expect(try await harness.count(waiting) == 8, "two more spends answered without reading ahead")
                }
                try await eventually("the read-aheads, ended") { try await harness.count(waiting) == 0 }

                // One that fails, counted by a sequence (which a rollback leaves moved): a first spend reads ahead
                // again once those above have ended (their count is given back), and its spend is answered as ever.
                try await run("CREATE SEQUENCE read_aheads_refused")
                try await run(
                    """
                    CREATE OR REPLACE FUNCTION read_spend_pages_ahead(spend_account text, spend_key text, spend_meter text, debit_key_prefix text, at_time timestamptz)
                    RETURNS bigint LANGUAGE plpgsql VOLATILE AS $$ BEGIN PERFORM nextval('read_aheads_refused'); RAISE EXCEPTION 'refused'; END $$
                    """)
                let refused = "SELECT CASE WHEN is_called THEN last_value ELSE 0 END FROM read_aheads_refused"
                var next = 0
                try await eventually("a first spend reading ahead again") {
                    next += 1
                    try await spend("ahead-d\(next)", key: "1")
                    return try await harness.count(refused) >= 1
                }
                #expect(try await CreditHoldTests.remaining(client, "ahead-d\(next)", "ai_requests") == 4, "the day's 5, 1 spent")
            }
        }
    }

    @Test("an account is known from its spend on until between one and two capacities of other accounts have spent since")
    func recentSpendersForgetInGenerations() {
        let recent = RecentSpenders(capacity: 3)
        let accounts = ["a", "b", "c", "d", "e", "f"].map { AccountID($0)! }
        let (a, b, c, d, e, f) = (accounts[0], accounts[1], accounts[2], accounts[3], accounts[4], accounts[5])
        #expect([a, b, c].map { recent.noteSpend(from: $0) } == [false, false, false])
        #expect(recent.noteSpend(from: a), "spent just before")
        #expect(!recent.noteSpend(from: d), "a new generation begins with d")
        #expect(recent.noteSpend(from: a), "a is still in the older generation, and now in the newer one too")
        #expect(!recent.noteSpend(from: e))
        #expect(!recent.noteSpend(from: f), "a third generation begins with f: b and c are forgotten")
        #expect(!recent.noteSpend(from: b))
        #expect(recent.noteSpend(from: f), "in the newer generation")
        #expect(recent.noteSpend(from: d), "in the older generation")
        #expect(!recent.noteSpend(from: c), "forgotten: five other accounts spent since (eight spends)")
    }
}
