import Foundation
import HTTPTypes
import HummingbirdTesting
import NIOCore
import Persistence
import PostgresNIO
import Testing

@testable import IntegrationSupport

/// The idempotency window (issue 56 part 2, docs/credits.md "How long a key is kept"), through the HTTP API and the
/// worker on real PostgreSQL, judged by what the app sees: inside the window a key answers its first spend again; its
/// hourly job then deletes answers and ended holds older than it, after which the key is free — a new spend under it is
/// charged (not dropped as posted because the ledger still holds the first spend's debits) and given back alone.
@Suite("The idempotency window: a key kept, then free again")
struct IdempotencyWindowTests {
    static let environment = CreditHoldTests.environment.merging(["STOREKEEPER_IDEMPOTENCY_WINDOW_DAYS": "30"]) { $1 }

    /// Runs the window's job once, as its hourly slot would (the schedule itself runs on the wall clock), and waits
    /// until the worker has finished it.
    static func runWindowJob(_ harness: StorekeeperHarness, _ name: String) async throws {
        try await harness.runJob("idempotency-window", uniqueKey: name)
    }

    /// The account's spend under `key` again, after `days` on the clock and the window's job: charged anew, then
    /// given back — exactly its own `amount`, not an earlier spend's debits under the same key.
    static func spendAgain(
        _ harness: StorekeeperHarness, _ client: any TestClientProtocol, clock: ShiftedClock, days: Double, account: String, key: String,
        amount: Int64
    ) async throws {
        clock.set(Date().addingTimeInterval(days * 86_400))
        try await runWindowJob(harness, "window-\(days)")
        #expect(try await harness.count("SELECT count(*) FROM usage_requests WHERE account_id = '\(account)'") == 0, "the answers went")
        let encoded = key.addingPercentEncoding(withAllowedCharacters: .alphanumerics)!
        #expect(try await SpendReversalTests.reverse(client, account, key: encoded).status == .notFound, "nothing left to give back")
        let before = try #require(try await CreditHoldTests.remaining(client, account, "exports"))
        let spent = try await SpendReversalTests.spend(client, account, "exports", Int(amount), key: key)
        #expect(spent.status == .ok, "\(String(buffer: spent.body))")
        #expect(try spent.answer(UsageAnswer.self).remaining == before - amount, "a new spend, charged")
        #expect(try await CreditHoldTests.remaining(client, account, "exports") == before - amount, "and the balance says so")
        let reversed = try await SpendReversalTests.reverse(client, account, key: encoded)
        #expect(reversed.status == .ok, "\(String(buffer: reversed.body))")
        let reversal = try reversed.answer(SpendReversalAnswer.self)
        #expect(reversal.amount == amount && reversal.returned == amount && reversal.lapsed == 0, "its own debits given back")
        #expect(try await CreditHoldTests.remaining(client, account, "exports") == before)
    }

    @Test(
        "a spend's key answers its first spend for 30 days; after the window's job the key is free: spends under it are charged and given back alone, window after window; a held hold stays, an ended one goes and its key is free"
    )
    func keyFreeAfterWindow() async throws {
        let clock = ShiftedClock()
        try await StorekeeperHarness.run(environment: Self.environment, clock: { clock.now }) { harness in
            try await harness.withHTTP { client in
                let account = "window-\(UUID().uuidString.prefix(8).lowercased())"
                try await CreditHoldTests.topUp(client, account, "exports", 40)
                let key = "report/7@1:0"  // a key that looks like the keys' own parts
                #expect(try await SpendReversalTests.spend(client, account, "exports", 4, key: key).status == .ok)
                let afterFirst = try #require(try await CreditHoldTests.remaining(client, account, "exports"))
                let retried = try await SpendReversalTests.spend(client, account, "exports", 4, key: key)
                #expect(try retried.status == .ok && retried.answer(UsageAnswer.self).remaining == afterFirst, "the first answer again")
                #expect(try await CreditHoldTests.remaining(client, account, "exports") == afterFirst, "charged once")
                #expect(
                    try await harness.count("SELECT count(*) FROM credit_ledger WHERE reason = 'usage' AND operation_key LIKE '%@1:0:_'") >= 1,
                    "the first spend under a key writes the plain keys, as the release before did")
                let held = try await CreditHoldTests.hold(client, account, "exports", 2, key: "gen-1")
                let firstHold = try held.answer(CreditHoldAnswer.self)
                #expect(try await CreditHoldTests.post(client, "/v1/holds/\(firstHold.id)/release", "").status == .ok)
                // A hold still held is never deleted, however old (a hold lasts a day; this one is made to look old).
                let stillHeld = try await CreditHoldTests.hold(client, account, "exports", 1, key: "gen-2", expiresIn: 86_400)
                #expect(stillHeld.status == .created)
                _ = try await harness.count(
                    "WITH o AS (UPDATE credit_holds SET created_at = created_at - interval '40 days' WHERE idempotency_key = 'gen-2' RETURNING 1) SELECT count(*) FROM o"
                )
                try await Self.runWindowJob(harness, "window-0")
                #expect(try await harness.count("SELECT count(*) FROM credit_holds WHERE idempotency_key = 'gen-2' AND state = 'held'") == 1)
                let holdID = try stillHeld.answer(CreditHoldAnswer.self).id
                #expect(try await CreditHoldTests.post(client, "/v1/holds/\(holdID)/release", "").status == .ok)
                _ = try await harness.count(
                    "WITH o AS (UPDATE credit_holds SET created_at = created_at + interval '40 days' WHERE idempotency_key = 'gen-2' RETURNING 1) SELECT count(*) FROM o"
                )

                // 29 days on: still inside the window, the answer and the ended holds alike.
                clock.set(Date().addingTimeInterval(29 * 86_400))
                try await Self.runWindowJob(harness, "window-29")
                #expect(try await harness.count("SELECT count(*) FROM usage_requests WHERE account_id = '\(account)'") == 1, "kept 30 days")
                #expect(try await harness.count("SELECT count(*) FROM credit_holds WHERE account_id = '\(account)'") == 2)
                let inside = try await SpendReversalTests.spend(client, account, "exports", 4, key: key)
                #expect(try inside.answer(UsageAnswer.self).remaining == afterFirst, "still the first answer")

                // 31 days on: the answer and the ended holds are gone; the key spends anew, and again a window later
                // (each time with other amounts, so that a reversal that found an earlier spend's debits would show).
                try await Self.spendAgain(harness, client, clock: clock, days: 31, account: account, key: key, amount: 3)
                #expect(try await harness.count("SELECT count(*) FROM credit_holds WHERE account_id = '\(account)'") == 0)
                #expect(try await CreditHoldTests.post(client, "/v1/holds/\(firstHold.id)/release", "").status == .notFound)
                try await Self.spendAgain(harness, client, clock: clock, days: 62, account: account, key: key, amount: 5)
                #expect(
                    try await harness.count(
                        "SELECT count(DISTINCT substring(operation_key from '@1:0@([0-9]+):')) FROM credit_ledger WHERE reason = 'usage'")
                        == 2, "the two spends under the key used again carry their own times")
                let newHold = try await CreditHoldTests.hold(client, account, "exports", 2, key: "gen-1")
                #expect(newHold.status == .created, "\(String(buffer: newHold.body))")
                #expect(try newHold.answer(CreditHoldAnswer.self).id != firstHold.id, "a new hold, not the first's answer")

                // A window later the account is on Pro, whose exports are unlimited: the key spends nothing, and giving
                // it back is refused as a spend that took nothing (409 not_spent, README) — it finds neither the debits
                // its earlier spends left under the plain keys nor anything to record.
                clock.set(Date().addingTimeInterval(93 * 86_400))
                try await Self.runWindowJob(harness, "window-93")
                let grant = try await CreditHoldTests.post(
                    client, "/admin/accounts/\(account)/grants", #"{"tier": "pro", "duration": "P7D", "reason": "test"}"#,
                    headers: CreditHoldTests.admin)
                #expect(grant.status == .created, "\(String(buffer: grant.body))")
                let unlimited = try await SpendReversalTests.spend(client, account, "exports", 6, key: key)
                #expect(try unlimited.status == .ok && unlimited.answer(UsageAnswer.self).remaining == nil, "\(String(buffer: unlimited.body))")
                let before = try await harness.count("SELECT count(*) FROM credit_ledger")
                let nothing = try await SpendReversalTests.reverse(
                    client, account, key: key.addingPercentEncoding(withAllowedCharacters: .alphanumerics)!)
                #expect(
                    try nothing.status == .conflict && nothing.answer(ErrorAnswer.self).error == "not_spent", "\(String(buffer: nothing.body))")
                #expect(
                    try await harness.count("SELECT count(*) FROM usage_requests WHERE account_id = '\(account)' AND reversed_at IS NOT NULL") == 0,
                    "no reversal recorded")
                #expect(try await harness.count("SELECT count(*) FROM credit_ledger") == before, "nothing posted")
            }
        }
    }

    @Test(
        "neighbouring keys stay apart: k, k:0, k@1 and K are four spends; after the window k spends anew and is given back alone, the others' answers gone"
    )
    func neighbouringKeys() async throws {
        let clock = ShiftedClock()
        try await StorekeeperHarness.run(environment: Self.environment, clock: { clock.now }) { harness in
            try await harness.withHTTP { client in
                let account = "neighbours-\(UUID().uuidString.prefix(8).lowercased())"
                try await CreditHoldTests.topUp(client, account, "exports", 40)
                let start = try #require(try await CreditHoldTests.remaining(client, account, "exports"))
                for (key, amount) in [("k", 2), ("k:0", 3), ("k@1", 4), ("K", 1)] {
                    #expect(try await SpendReversalTests.spend(client, account, "exports", amount, key: key).status == .ok, "\(key)")
                }
                #expect(try await CreditHoldTests.remaining(client, account, "exports") == start - 10, "each charged once, none taken for another")
                try await Self.spendAgain(harness, client, clock: clock, days: 31, account: account, key: "k", amount: 5)
                #expect(try await SpendReversalTests.reverse(client, account, key: "k%3A0").status == .notFound)
            }
        }
    }

    @Test(
        "Apple's retention rules still know when a customer last spent once the window has deleted the spend's answer; an erasure deletes what was kept"
    )
    func lastSpendKept() async throws {
        try await StorekeeperHarness.run(environment: Self.environment) { harness in
            try await harness.withHTTP { client in
                let account = UUID()
                var flow = LifecycleFlow(harness: harness, client: client, account: account)
                try await flow.send(.subscribe)
                #expect(try await client.spend(account, amount: 3).status == .ok)
                let decisions = RetentionDecisions(logger: TestDatabase.logger)
                let subscription = flow.originalTransactionId
                let read = { @Sendable in
                    try await harness.client.withConnection {
                        try await decisions.reading(of: subscription, environment: .sandbox, on: $0)?.lastSpend
                    }
                }
                let spentAt = try #require(try await read())
                let deleted = try await harness.client.withConnection {
                    try await UsageRequests(logger: TestDatabase.logger).deleteAnswers(before: Date().addingTimeInterval(60), limit: 10, on: $0)
                }
                #expect(deleted == 1)
                #expect(try await harness.count("SELECT count(*) FROM usage_requests") == 0)
                #expect(try await read() == spentAt, "the same moment, from what the window kept")
                // What was kept of the account goes with it when it is erased.
                let id = account.uuidString.lowercased()
                let erased = try await CreditHoldTests.post(
                    client, "/admin/accounts/\(id)/erase", #"{"confirm": "\#(id)"}"#, headers: CreditHoldTests.admin)
                #expect(erased.status == .ok, "\(String(buffer: erased.body))")
                #expect(try await harness.count("SELECT count(*) FROM account_last_spends") == 0)
            }
        }
    }
}
