import Foundation
import HummingbirdTesting
import PostgresNIO
import Subscriptions
import TestSupport
import Testing

@testable import Application
@testable import IntegrationSupport

/// `serve`'s status cache: reads are answered without a query, yet a spend or an applied notification shows in the
/// very next read of the same process, another process's commit shows as soon as its NOTIFY arrives, and expiry by
/// the clock needs no write at all.
@Suite("Status cache")
struct StatusCacheTests {
    static func remaining(_ flow: LifecycleFlow) async throws -> Int64? { try await flow.credits().remaining }

    @Test("served from memory; a spend and an applied notification show in the next read; another connection's commit once NOTIFYed")
    func freshness() async throws {
        try await CreditTests.withClockedHTTP { harness, client, clock in
            let account = UUID()
            var flow = LifecycleFlow(harness: harness, client: client, account: account)
            try await flow.send(.subscribe)
            clock.now = flow.clock.addingTimeInterval(1)
            // Nothing is cached until the listener hears other processes' changes (on a loaded machine, a while).
            try await eventually("the account-change listener to be connected") { harness.components.statusCache.isListening }
            #expect(try await Self.remaining(flow) == 1000)

            // A change no trigger reports (replication role) is not seen: the answer came from the cache. Any job the
            // worker starts meanwhile (a periodic one, on a loaded machine at any moment) drops every entry first, so
            // the read is tried again, the change undone as silently, until one falls between jobs.
            let original = flow.originalTransactionId
            func silently(_ product: String) async throws {
                try await harness.client.withConnection { connection in
                    try await connection.query("SET session_replication_role = replica", logger: TestDatabase.logger)
                    try await connection.query(
                        "UPDATE subscriptions SET product_id = \(product) WHERE original_transaction_id = \(original)", logger: TestDatabase.logger)
                    try await connection.query("SET session_replication_role = origin", logger: TestDatabase.logger)
                }
            }
            // A minute: under the whole suite's load a worker's jobs can follow each other for longer than the default wait.
            try await eventually(timeout: .seconds(60), "a read served from the cache, not seeing a change no trigger reported") {
                _ = try await flow.statusAnswer()
                try await silently("max.monthly")
                if try await flow.statusAnswer().tier == "pro" { return true }
                try await silently("pro.monthly")
                return false
            }
            harness.components.statusCache.invalidateAll()
            #expect(try await flow.statusAnswer().tier == "max")
            try await harness.client.query(
                "UPDATE subscriptions SET product_id = 'pro.monthly' WHERE original_transaction_id = \(flow.originalTransactionId)",
                logger: TestDatabase.logger)
            try await eventually("the NOTIFY of another connection's commit to drop the entry") {
                try await flow.statusAnswer().tier == "pro"
            }

            for amount in [7, 13] {
                let before = try #require(try await Self.remaining(flow))
                #expect(try await client.spend(account, amount: Int64(amount)).status == .ok)
                #expect(try await Self.remaining(flow) == before - Int64(amount), "the spend shows in the next read")
            }
            // Ledger rows written by another connection: the NOTIFY drops the entry.
            let granted = try #require(try await Self.remaining(flow))
            try await harness.client.query(
                """
                INSERT INTO credit_ledger (operation_key, bucket, delta, reason)
                SELECT 'test:' || key, key, -5, 'usage' FROM credit_buckets
                WHERE original_transaction_id = \(flow.originalTransactionId) AND kind = 'cycle'
                """, logger: TestDatabase.logger)
            try await eventually("the ledger row's NOTIFY to drop the entry") { try await Self.remaining(flow) == granted - 5 }

            try await flow.send(.refund)
            let refunded = try await flow.statusAnswer()
            #expect(refunded.state == "free_with_credits" && refunded.entitled == false)
        }
    }

    @Test("expiry by the clock shows without any write, from the cached entry")
    func clockRule() async throws {
        try await CreditTests.withClockedHTTP { harness, client, clock in
            var flow = LifecycleFlow(harness: harness, client: client, account: UUID())
            try await flow.send(.subscribe)
            try await flow.send(.cancel)
            clock.now = flow.clock.addingTimeInterval(1)
            #expect(try await flow.statusAnswer().entitled == true)
            let writes = try await harness.count("SELECT (SELECT count(*) FROM credit_ledger) + (SELECT count(*) FROM subscriptions)")
            clock.now = flow.period!.end.addingTimeInterval(1)
            let expired = try await flow.statusAnswer()
            #expect(expired.entitled == false && expired.state == "free_with_credits")
            #expect(try await harness.count("SELECT (SELECT count(*) FROM credit_ledger) + (SELECT count(*) FROM subscriptions)") == writes)
        }
    }

    @Test("a read that began before a change never stores what it read; nothing is served while not listening")
    func races() {
        let cache = AccountStatusCache()
        let account = AccountID("alice")!
        let inputs = AccountStatusCache.Inputs(subscriptions: [], buckets: [])
        cache.store(inputs, of: account, readSince: cache.beginRead())
        #expect(cache.inputs(of: account) == nil, "not listening: nothing kept")
        cache.setListening(true)
        let early = cache.beginRead()
        cache.invalidate(account)
        cache.store(inputs, of: account, readSince: early)
        #expect(cache.inputs(of: account) == nil, "read before the change")
        cache.store(inputs, of: account, readSince: cache.beginRead())
        #expect(cache.inputs(of: account) != nil)
        let beforeAll = cache.beginRead()
        cache.invalidateAll()
        cache.store(inputs, of: AccountID("bob")!, readSince: beforeAll)
        #expect(cache.inputs(of: account) == nil && cache.inputs(of: AccountID("bob")!) == nil)
        cache.store(inputs, of: account, readSince: cache.beginRead())
        cache.beginWrite()
        #expect(cache.inputs(of: account) == nil, "a job's write drops every entry before it commits")
        let duringWrite = cache.beginRead()
        cache.store(inputs, of: account, readSince: duringWrite)
        #expect(cache.inputs(of: account) == nil, "nothing is stored while the job runs")
        cache.endWrite()
        cache.store(inputs, of: account, readSince: duringWrite)
        #expect(cache.inputs(of: account) == nil, "a read begun during the job does not store after it")
        cache.store(inputs, of: account, readSince: cache.beginRead())
        #expect(cache.inputs(of: account) != nil)
        cache.setListening(false)
        #expect(cache.inputs(of: account) == nil, "the listener lost its connection")
    }
}
