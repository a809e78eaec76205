import Foundation
import Persistence
import PostgresNIO
import Subscriptions
import Testing

@testable import Application
@testable import IntegrationSupport

/// A first spend from an account reads its pages before it joins a group (sql/0052, ``SpendCredits``): what the
/// group will read and write, on a connection of its own, with no lock taken and nothing written; only accounts that
/// have not spent lately do it (``RecentSpenders``).
@Suite("Reading a spend's pages ahead")
struct SpendWarmingTests {
    @Test(
        "finds the stored answer, the debits' place, the status inputs and each live bucket's ledger entries and key, by index, beside a group holding the account's lock, writing nothing"
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
                    // The answer, an index entry at or after the debits' keys (`topup:…` sorts after `spend:…`), the
                    // subscription and its two live buckets, each bucket's ledger entry and its key.
                    #expect(try await requests.warmPages(for: request("k1", of: account), at: Date(), on: connection) == 1 + 1 + 3 + 2 + 2)
                    #expect(try await requests.warmPages(for: request("k2", of: account), at: Date(), on: connection) == 1 + 3 + 2 + 2)
                    let nobody = try #require(AccountID("account-none"))
                    #expect(try await requests.warmPages(for: request("k1", of: nobody), at: Date(), on: connection) == 1)
                    let written = try await connection.query("SELECT pg_current_xact_id_if_assigned()::text", logger: TestDatabase.logger)
                    for try await id in written.decode(String?.self) { #expect(id == nil, "reading ahead wrote something") }

                    // The second call: the first on a connection reads the catalogue to plan the function's statements.
                    var blocks: [Int] = []
                    for _ in 0..<2 {
                        let plan = try await connection.query(
                            """
                            EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON)
                            SELECT warm_spend_pages('account-777', 'k', 'spend:11:account-777:k', now())
                            """, logger: TestDatabase.logger)
                        for try await text in plan.decode(String.self) {
                            let top = try #require(
                                (try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [[String: Any]])?.first?["Plan"] as? [String: Any])
                            blocks.append((top["Shared Hit Blocks"] as? Int ?? 0) + (top["Shared Read Blocks"] as? Int ?? 0))
                        }
                    }
                    #expect(blocks.count == 2)
                    #expect((blocks.last ?? 0) > 0)
                    #expect((blocks.last ?? .max) < 45, "reading account-777's pages ahead touched \(blocks) blocks")
                }
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
        #expect(!recent.noteSpend(from: c), "forgotten: six others spent since")
    }
}
