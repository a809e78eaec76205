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
        _ = try await harness.count(
            "WITH queued AS (INSERT INTO jobs (kind, args, unique_key) VALUES ('idempotency-window', '{}', '\(name)') RETURNING 1) SELECT count(*) FROM queued"
        )
        try await eventually(timeout: .seconds(30), "the idempotency window's job") {
            try await harness.count(
                "SELECT count(*) FROM job_history WHERE kind = 'idempotency-window' AND unique_key = '\(name)' AND state = 'completed'")
                == 1
        }
    }

    @Test(
        "a spend's key answers its first spend for 30 days; after the window's job the key is free: a new spend under it is charged and given back alone, the customer's last spend still known; an ended hold's key is free too"
    )
    func keyFreeAfterWindow() async throws {
        let clock = ShiftedClock()
        try await StorekeeperHarness.run(environment: Self.environment, clock: { clock.now }) { harness in
            try await harness.withHTTP { client in
                let account = "window-\(UUID().uuidString.prefix(8).lowercased())"
                try await CreditHoldTests.topUp(client, account, "exports", 20)
                #expect(try await SpendReversalTests.spend(client, account, "exports", 4, key: "report/7").status == .ok)
                let afterFirst = try #require(try await CreditHoldTests.remaining(client, account, "exports"))
                let retried = try await SpendReversalTests.spend(client, account, "exports", 4, key: "report/7")
                #expect(try retried.status == .ok && retried.answer(UsageAnswer.self).remaining == afterFirst, "the first answer again")
                #expect(try await CreditHoldTests.remaining(client, account, "exports") == afterFirst, "charged once")
                let firstDebits = try await harness.count("SELECT count(*) FROM credit_ledger WHERE reason = 'usage'")
                #expect(firstDebits >= 1)
                let firstSpentAt = try await harness.count(
                    "SELECT (extract(epoch FROM created_at) * 1000000)::int8 FROM usage_requests WHERE account_id = '\(account)'")
                // A spend of the release before sql/0049 (keyed without its time), which is how most old keys look:
                // the reuse below must not collide with it either.
                _ = try await harness.count(
                    """
                    WITH a AS (UPDATE usage_requests SET debits_at_micros = NULL WHERE account_id = '\(account)' RETURNING 1),
                         l AS (UPDATE credit_ledger SET operation_key = regexp_replace(operation_key, '@[0-9]+:([0-9]+)$', ':\\1')
                               WHERE reason = 'usage' RETURNING 1)
                    SELECT (SELECT count(*) FROM a) + (SELECT count(*) FROM l)
                    """)
                #expect(try await harness.count("SELECT count(*) FROM credit_ledger WHERE reason = 'usage' AND operation_key LIKE '%@%'") == 0)
                let givenBack = try await SpendReversalTests.reverse(client, account, key: "report%2F7")
                #expect(try givenBack.answer(SpendReversalAnswer.self).returned == 4, "a spend keyed the old way is given back by its old keys")
                #expect(try await CreditHoldTests.remaining(client, account, "exports") == afterFirst + 4)
                let held = try await CreditHoldTests.hold(client, account, "exports", 2, key: "gen-1")
                let firstHold = try held.answer(CreditHoldAnswer.self)
                #expect(try await CreditHoldTests.post(client, "/v1/holds/\(firstHold.id)/release", "").status == .ok)
                let holdAt = try await harness.count(
                    "SELECT (extract(epoch FROM created_at) * 1000000)::int8 FROM credit_holds WHERE account_id = '\(account)'")

                // 29 days on: still inside the window.
                clock.set(Date().addingTimeInterval(29 * 86_400))
                try await Self.runWindowJob(harness, "window-29")
                #expect(try await harness.count("SELECT count(*) FROM usage_requests WHERE account_id = '\(account)'") == 1, "kept 30 days")
                let inside = try await SpendReversalTests.spend(client, account, "exports", 4, key: "report/7")
                #expect(try inside.answer(UsageAnswer.self).remaining == afterFirst, "still the first answer")

                // 31 days on: the answer and the ended hold are gone, and when the customer last spent is kept.
                clock.set(Date().addingTimeInterval(31 * 86_400))
                let recent = try await SpendReversalTests.spend(client, account, "exports", 1, key: "recent")
                #expect(recent.status == .ok)
                try await Self.runWindowJob(harness, "window-31")
                #expect(
                    try await harness.count("SELECT count(*) FROM usage_requests WHERE account_id = '\(account)'") == 1,
                    "only the answer inside the window")
                #expect(try await harness.count("SELECT count(*) FROM credit_holds WHERE account_id = '\(account)'") == 0)
                #expect(
                    try await harness.count(
                        "SELECT (extract(epoch FROM spent_at) * 1000000)::int8 FROM account_last_spends WHERE account_id = '\(account)'")
                        == max(firstSpentAt, holdAt),
                    "the last spend or hold it deleted")
                let beforeAgain = try #require(try await CreditHoldTests.remaining(client, account, "exports"))
                let again = try await SpendReversalTests.spend(client, account, "exports", 4, key: "report/7")
                #expect(again.status == .ok, "\(String(buffer: again.body))")
                #expect(try again.answer(UsageAnswer.self).remaining == beforeAgain - 4, "a new spend: charged")
                #expect(try await CreditHoldTests.remaining(client, account, "exports") == beforeAgain - 4)
                #expect(
                    try await harness.count("SELECT count(*) FROM credit_ledger WHERE reason = 'usage'") > firstDebits + 1,
                    "the new spend's debits posted beside the first's, which stay")
                let reversed = try await SpendReversalTests.reverse(client, account, key: "report%2F7")
                #expect(reversed.status == .ok, "\(String(buffer: reversed.body))")
                let reversal = try reversed.answer(SpendReversalAnswer.self)
                #expect(reversal.amount == 4 && reversal.returned == 4 && reversal.lapsed == 0, "the new spend's 4, not the first's too")
                #expect(try await CreditHoldTests.remaining(client, account, "exports") == beforeAgain, "given back once, what it took")
                #expect(try await harness.count("SELECT sum(delta)::int8 FROM credit_ledger WHERE reason = 'usage reversed'") == 8, "4 for each")
                let newHold = try await CreditHoldTests.hold(client, account, "exports", 2, key: "gen-1")
                #expect(newHold.status == .created, "\(String(buffer: newHold.body))")
                #expect(try newHold.answer(CreditHoldAnswer.self).id != firstHold.id, "a new hold, not the first's answer")
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
