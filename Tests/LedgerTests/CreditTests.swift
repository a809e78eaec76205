import AppStoreModels
import Credits
import Foundation
import HummingbirdTesting
import LocalSigning
import NIOCore
import TestSupport
import Testing

@testable import IntegrationSupport

/// Credits end to end (SPEC §7) with the example catalogue `config/tiers.yml`: pro.monthly grants 1,000 ai_requests
/// per cycle (100 in a trial) and unlimited exports; max.monthly 3,000; the free tier 5 ai_requests a day and 3
/// exports a month; credits.100 is a top-up.
@Suite("Credits, on real PostgreSQL")
struct CreditTests {
    @Test("purchase grants the cycle; a trial is capped; renewal resets without carry-over; expiry keeps top-ups")
    func cycleGrants() async throws {
        try await Self.withClockedHTTP { harness, client, clock in
            var flow = LifecycleFlow(harness: harness, client: client, account: UUID())
            try await flow.send(.subscribe) {
                $0.transaction?.offerType = 1
                $0.transaction?.offerDiscountType = "FREE_TRIAL"
            }
            clock.now = flow.clock.addingTimeInterval(1)
            #expect(try await flow.credits().cycle == 100)
            #expect(try await flow.statusAnswer().state == "trial")
            #expect(try await flow.statusAnswer().tier == "pro")
            try await flow.send(.renew)
            clock.now = flow.period!.start.addingTimeInterval(60)
            var credits = try await flow.credits()
            #expect(credits.cycle == 1000)
            #expect(credits.resetsAt == flow.period!.end.formatted(.iso8601))
            #expect((try await flow.credits("exports")).unlimited == true)
            #expect((try await flow.credits("exports")).remaining == nil)

            #expect(try await client.spend(flow.subscription.accountId!, amount: 300).answer(UsageAnswer.self).remaining == 700)
            #expect(try await flow.credits().cycle == 700)
            try await flow.send(.renew)
            #expect(try await flow.credits().cycle == 700, "a renewal reported early does not reset early")
            clock.now = flow.period!.start.addingTimeInterval(60)
            #expect(try await flow.credits().cycle == 1000)

            let topUp = try await client.postTransaction(try Self.consumable(harness, "credits.100"), account: flow.subscription.accountId!)
            #expect(topUp.status == .ok)
            // No EXPIRED needed: past the period's end the cycle credits are gone by the clock.
            clock.now = flow.period!.end.addingTimeInterval(86_400)
            credits = try await flow.credits()
            #expect(credits.topUp == 100)
            #expect(credits.cycle == nil)
            #expect(try await flow.statusAnswer().tier == "free")
        }
    }

    @Test("immediate upgrade: unused credits become top-ups, the new cycle is prorated by what was paid")
    func upgrade() async throws {
        try await Self.withClockedHTTP { harness, client, clock in
            var flow = LifecycleFlow(harness: harness, client: client, account: UUID())
            try await flow.send(.subscribe)
            clock.now = flow.clock.addingTimeInterval(1)
            let old = flow.period!
            #expect(try await client.spend(flow.subscription.accountId!, amount: 250).status == .ok)
            let upgrade = try await flow.send(.upgrade, target: "max.monthly")
            let at = LifecycleFlow.date(upgrade.transaction!.purchaseDate!)
            clock.now = at.addingTimeInterval(1)
            let expected = Proration.upgradeGrant(
                allowance: 3000, newPrice: 19990, oldPrice: 9990,
                remaining: Int64((old.end.timeIntervalSince(at) * 1000).rounded()), cycle: Int64((old.duration * 1000).rounded()))
            let credits = try await flow.credits()
            #expect(credits.topUp == 750)
            #expect(credits.cycle == expected)
            #expect(credits.remaining == expected + 750)
            #expect(try await flow.statusAnswer().tier == "max")
        }
    }

    @Test(
        "refund removes the cycle credits, its reversal restores exactly them; a prorated refund of an earlier period claws back ceil(grant × share)")
    func refunds() async throws {
        try await Self.withClockedHTTP { harness, client, clock in
            var flow = LifecycleFlow(harness: harness, client: client, account: UUID())
            let purchase = try await flow.send(.subscribe)
            clock.now = flow.clock.addingTimeInterval(1)
            #expect(try await client.spend(flow.subscription.accountId!, amount: 100).status == .ok)
            try await flow.send(.refund)
            #expect(try await flow.credits().cycle == nil)
            #expect(try await harness.count("SELECT count(*) FROM credit_ledger WHERE operation_key LIKE 'refund:%' AND delta = -900") == 1)
            try await flow.send(.refund) {
                $0.notificationType = "REFUND_REVERSED"
                $0.status = 1
                $0.transaction?.revocationDate = nil
                $0.transaction?.revocationType = nil
                $0.renewalInfo?.autoRenewStatus = 1
            }
            #expect(try await flow.credits().cycle == 900)

            try await flow.send(.renew)
            clock.now = flow.period!.start.addingTimeInterval(60)
            var earlier = purchase
            earlier.notificationType = "REFUND"
            earlier.signedDate = Int64(flow.clock.addingTimeInterval(60).timeIntervalSince1970 * 1000)
            // Apple signs the transaction anew in every notification: this version is newer than the reversal's.
            earlier.transaction?.signedDate = earlier.signedDate
            earlier.transaction?.revocationDate = earlier.signedDate
            earlier.transaction?.revocationType = "REFUND_PRORATED"
            earlier.transaction?.revocationPercentage = 33_333
            try await flow.post(earlier)
            // ceil(1000 × 33.333 %) = 334 of the earlier grant, taken from the current cycle.
            #expect(try await flow.credits().cycle == 1000 - 334)
            #expect(try await flow.statusAnswer().state == "subscribed")
        }
    }

    @Test("top-ups from ONE_TIME_CHARGE and from the app, each transaction once; their refund takes them back")
    func topUps() async throws {
        try await StorekeeperHarness.run { harness in
            try await harness.withHTTP { client in
                let account = UUID()
                var transaction = TransactionPayload(
                    transactionId: "7000001", originalTransactionId: "7000001", productId: "credits.100",
                    bundleId: StorekeeperHarness.bundleId, environment: .sandbox, signedDate: 1_790_000_000_000)
                transaction.type = "Consumable"
                transaction.appAccountToken = account.uuidString.lowercased()
                let charge = SimulatedEvent(
                    notificationType: "ONE_TIME_CHARGE", subtype: nil, status: nil, signedDate: 1_790_000_000_000, transaction: transaction,
                    renewalInfo: nil)
                let flow = LifecycleFlow(harness: harness, client: client, account: account)
                try await flow.post(charge)
                try await flow.post(charge)
                #expect(try await client.postTransaction(try harness.signer.signer.sign(transaction), account: account).status == .ok)
                #expect(try await flow.credits().topUp == 100)
                #expect(try await harness.count("SELECT count(*) FROM notifications WHERE apply_outcome = 'topped_up'") == 2)

                var refund = charge
                refund.notificationType = "REFUND"
                refund.signedDate += 1000
                refund.transaction?.revocationDate = refund.signedDate
                try await flow.post(refund)
                #expect(try await flow.credits().topUp == 0)
            }
        }
    }

    @Test("spending: atomic under 40 parallel requests, idempotent by key, 402 deducts nothing, bad input 400")
    func spending() async throws {
        try await Self.withClockedHTTP { harness, client, clock in
            var flow = LifecycleFlow(harness: harness, client: client, account: UUID())
            try await flow.send(.subscribe)
            clock.now = flow.clock.addingTimeInterval(1)
            let account = flow.subscription.accountId!
            let results = try await withThrowingTaskGroup(of: Int.self) { group in
                for _ in 0..<40 { group.addTask { Int(try await client.spend(account, amount: 30).status.code) } }
                return try await group.reduce(into: [Int]()) { $0.append($1) }
            }
            #expect(results.filter { $0 == 200 }.count == 33)
            #expect(results.filter { $0 == 402 }.count == 7, "\(results.sorted())")
            #expect(try await flow.credits().remaining == 10)

            let first = try await client.spend(account, amount: 4, key: "order-17")
            let again = try await client.spend(account, amount: 4, key: "order-17")
            #expect(first.status == .ok && again.status == .ok)
            #expect(try first.answer(UsageAnswer.self).remaining == 6 && again.answer(UsageAnswer.self).remaining == 6)
            let reused = try await client.spend(account, amount: 5, key: "order-17")
            #expect(reused.status == .unprocessableContent)

            let refused = try await client.spend(account, amount: 7, key: "big")
            #expect(refused.status.code == 402)
            let refusal = try refused.answer(UsageRefusalAnswer.self)
            #expect(refusal.error == "insufficient_credits")
            #expect(refusal.remaining == 6)
            #expect(try await client.spend(account, amount: 7, key: "big").status.code == 402)
            #expect(try await flow.credits().remaining == 6)

            #expect(try await client.spend(account, meter: "nope", amount: 1).answer(ErrorAnswer.self).error == "unknown_meter")
            #expect(try await client.spend(account, amount: 0).status == .badRequest)
            #expect(try await client.spend(account, amount: -3).status == .badRequest)
            #expect(try await client.spend(account, meter: "exports", amount: 1_000_000).status == .ok)
            #expect(try await harness.count("SELECT count(*) FROM credit_ledger WHERE delta < 0") == 34)
        }
    }

    @Test("spends arriving together share commits: per account never more than the balance, one answer per key, a reused key refused")
    func spendsShareCommits() async throws {
        try await StorekeeperHarness.run(worker: false) { harness in
            try await harness.withHTTP { client in
                // Five free accounts with 5 daily credits each; per account three spends of 2, the first one sent twice,
                // and its key reused for 3: all 25 at once.
                let accounts = (0..<5).map { _ in UUID() }
                struct Sent: Sendable {
                    var account: UUID
                    var key: String
                    var amount: Int64
                }
                let sends = accounts.flatMap { account in
                    [
                        Sent(account: account, key: "a", amount: 2), Sent(account: account, key: "a", amount: 2),
                        Sent(account: account, key: "a", amount: 3), Sent(account: account, key: "b", amount: 2),
                        Sent(account: account, key: "c", amount: 2),
                    ]
                }
                let commitsBefore = try await harness.count("SELECT xact_commit FROM pg_stat_database WHERE datname = current_database()")
                let answers = try await withThrowingTaskGroup(of: (Sent, UInt, Int64?).self) { group in
                    for sent in sends {
                        group.addTask {
                            let response = try await client.spend(sent.account, amount: sent.amount, key: sent.key)
                            // A refusal (402, 422) carries the balance too (openapi `UsageRefusal`).
                            let remaining =
                                response.status == .ok
                                ? try response.answer(UsageAnswer.self).remaining : try response.answer(UsageRefusalAnswer.self).remaining
                            return (sent, UInt(response.status.code), remaining)
                        }
                    }
                    return try await group.reduce(into: [(Sent, UInt, Int64?)]()) { $0.append($1) }
                }
                let commits = try await harness.count("SELECT xact_commit FROM pg_stat_database WHERE datname = current_database()") - commitsBefore
                // Each spend alone commits once (the counter is flushed by the statistics collector; readers commit too):
                // shared, 25 spends take fewer.
                #expect(commits < sends.count, "\(commits) commits for \(sends.count) spends")
                for account in accounts {
                    let mine = answers.filter { $0.0.account == account }
                    // Key "a" with 2, twice: the same answer. Whichever of "a" with 2 and "a" with 3 came first is
                    // answered; the other spend under that key is refused (both "a" with 2 when "a" with 3 was first).
                    let sameKey = mine.filter { $0.0.key == "a" && $0.0.amount == 2 }
                    #expect(sameKey.count == 2 && sameKey[0].1 == sameKey[1].1 && sameKey[0].2 == sameKey[1].2)
                    let otherAmount = try #require(mine.first { $0.0.key == "a" && $0.0.amount == 3 })
                    let refused = mine.filter { $0.1 == 422 }.map { ($0.0.key, $0.0.amount) }
                    if otherAmount.1 == 422 {
                        #expect(refused.count == 1 && sameKey[0].1 != 422, "\(refused)")
                    } else {
                        #expect(refused.count == 2 && refused.allSatisfy { $0 == ("a", 2) }, "\(refused)")
                    }
                    // What was answered spent is exactly what left the ledger, and never more than the 5 there were.
                    let spentKeys = Dictionary(mine.filter { $0.1 == 200 }.map { ($0.0.key, $0.0.amount) }) { first, _ in first }
                    let spent = spentKeys.values.reduce(0, +)
                    let debited = try await harness.count(
                        "SELECT coalesce(-sum(delta), 0)::bigint FROM credit_ledger WHERE operation_key LIKE 'spend:36:\(account.uuidString.lowercased()):%'"
                    )
                    #expect(Int64(debited) == spent && spent <= 5 && spent >= 4, "spent \(spent), debited \(debited)")
                    #expect(
                        try await harness.count("SELECT count(*) FROM usage_requests WHERE account_id = '\(account.uuidString.lowercased())'") == 3)
                    let status = try await client.getWithKey("/v1/accounts/\(account)/status").answer(StatusAnswer.self)
                    #expect(status.credits["ai_requests"]?.remaining == 5 - spent)
                }
            }
        }
    }

    @Test("the free tier: a daily quota per UTC day and monthly exports; spent out, the account is free_no_credits")
    func freeTier() async throws {
        try await StorekeeperHarness.run(worker: false) { harness in
            try await harness.withHTTP { client in
                let flow = LifecycleFlow(harness: harness, client: client, account: UUID())
                let account = flow.subscription.accountId!
                let credits = try await flow.credits()
                #expect(credits.dailyRemaining == 5)
                #expect(credits.cycle == nil)
                #expect(try await flow.credits("exports").cycle == 3)
                #expect(try await harness.count("SELECT count(*) FROM credit_ledger") == 0, "looking at an account writes nothing")
                #expect(try await client.spend(account, amount: 5).status == .ok)
                #expect(try await client.spend(account, amount: 1).status.code == 402)
                #expect(try await flow.statusAnswer().state == "free_with_credits")
                #expect(try await client.spend(account, meter: "exports", amount: 3).status == .ok)
                let status = try await flow.statusAnswer()
                #expect(status.state == "free_no_credits")
                #expect(status.tier == "free")
            }
        }
    }

    @Test("an annual plan resets monthly: the job grants each month once, a late job is covered on read")
    func annualMonthlyResets() async throws {
        try await StorekeeperHarness.run { harness in
            try await harness.withHTTP { client in
                var flow = LifecycleFlow(harness: harness, client: client, account: UUID())
                flow.subscription.productId = "pro.annual"
                let anchor = Date().addingTimeInterval(-45 * 86_400)
                let purchase = try await flow.send(.subscribe) {
                    $0.transaction?.purchaseDate = Int64(anchor.timeIntervalSince1970 * 1000)
                    $0.transaction?.expiresDate = Int64(anchor.addingTimeInterval(365 * 86_400).timeIntervalSince1970 * 1000)
                }
                // Credits are keyed by billing period (webOrderLineItemId) and credit window.
                let period = purchase.transaction!.webOrderLineItemId!
                let anchorDate = LifecycleFlow.date(Int64(anchor.timeIntervalSince1970 * 1000))
                // Window 1 began 15 days ago: the purchase was learnt after that, so both windows are granted at once,
                // and the reset of window 2 is scheduled at its start.
                #expect(try await harness.count("SELECT count(*) FROM credit_ledger WHERE operation_key = 'grant:\(period):w1:ai_requests'") == 1)
                let boundary = CreditCalendar.monthlyBoundary(anchor: anchorDate, month: 2)
                #expect(
                    try await harness.count(
                        "SELECT count(*) FROM jobs WHERE unique_key = 'credit-reset:\(period):\(Int64(boundary.timeIntervalSince1970))'") == 1)
                let credits = try await flow.credits()
                #expect(credits.cycle == 1000)
                #expect(credits.resetsAt == boundary.formatted(.iso8601))
                #expect(try await harness.count("SELECT count(*) FROM credit_ledger WHERE operation_key LIKE 'grant:\(period):w%'") == 2)
                // The reset job derives the subscription again: run now, it grants nothing twice.
                try await harness.client.query("UPDATE jobs SET run_at = now() WHERE unique_key LIKE 'credit-reset:%'", logger: TestDatabase.logger)
                try await eventually("the reset job to run") {
                    try await harness.count("SELECT count(*) FROM job_history WHERE kind = 'credit-reset' AND state = 'completed'") >= 1
                }
                #expect(try await harness.count("SELECT count(*) FROM credit_ledger WHERE operation_key LIKE 'grant:\(period):w%'") == 2)
            }
        }
    }

    @Test("re-sent and reordered credit-affecting notifications never double the ledger")
    func idempotentReplay() async throws {
        try await StorekeeperHarness.run { harness in
            try await harness.withHTTP { client in
                var flow = LifecycleFlow(harness: harness, client: client, account: UUID())
                var events: [SimulatedEvent] = []
                events.append(try await flow.send(.subscribe))
                events.append(try await flow.send(.renew))
                events.append(try await flow.send(.upgrade, target: "max.monthly"))
                events.append(try await flow.send(.refund))
                let ledger = try await Self.ledger(harness)
                for event in events.reversed() + events { try await flow.post(event) }
                #expect(try await Self.ledger(harness) == ledger)
            }
        }
    }

    /// A harness whose clock the test moves, with its HTTP client.
    static func withClockedHTTP(
        _ body: @escaping @Sendable (StorekeeperHarness, any TestClientProtocol, TestClock) async throws -> Void
    ) async throws {
        let clock = TestClock()
        try await StorekeeperHarness.run(clock: { clock.now }) { harness in
            try await harness.withHTTP { client in try await body(harness, client, clock) }
        }
    }

    static func consumable(_ harness: StorekeeperHarness, _ product: String) throws -> String {
        var transaction = TransactionPayload(
            transactionId: String(Int.random(in: 1_000_000...9_999_999)), originalTransactionId: "0", productId: product,
            bundleId: StorekeeperHarness.bundleId, environment: .sandbox, signedDate: Int64(Date().timeIntervalSince1970 * 1000))
        transaction.originalTransactionId = transaction.transactionId
        transaction.type = "Consumable"
        return try harness.signer.signer.sign(transaction)
    }

    static func ledger(_ harness: StorekeeperHarness) async throws -> [String] {
        let rows = try await harness.client.query("SELECT operation_key || ' ' || delta FROM credit_ledger ORDER BY 1", logger: TestDatabase.logger)
        var lines: [String] = []
        for try await line in rows.decode(String.self) { lines.append(line) }
        return lines
    }
}
