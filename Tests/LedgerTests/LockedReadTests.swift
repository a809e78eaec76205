import Credits
import Foundation
import Persistence
import PostgresNIO
import StorekeeperRuntime
import Subscriptions
import Testing

@testable import IntegrationSupport

/// Spends and applies take an account's lock and read what it guards in one round trip (a VOLATILE function, whose
/// statements each read as of their own start). A single query could not: it reads as of its start, before it waited.
@Suite("A read made in the round trip that takes its lock sees what the lock's previous holder committed, on real PostgreSQL")
struct LockedReadTests {
    /// Two `serve` processes can spend under the same idempotency key at once. The second group waits for the
    /// account's lock; once it has it, it must see the answer the first group committed while it waited, or it would
    /// spend again under that key.
    @Test("a group that waited for an account's lock reads the answer the holder committed meanwhile")
    func readsWhatTheHolderCommitted() async throws {
        try await TestDatabase.withMigratedClient(maximumConnections: 3) { client in
            let usage = UsageRequests(logger: TestDatabase.logger)
            let account = AccountID(UUID())
            let request = UsageRequests.Request(account: account, meter: "ai_requests", amount: 1, idempotencyKey: "request-1")
            let answer = UsageRequests.Answer(outcome: .spent, meter: "ai_requests", remaining: 41)
            let (held, holding) = AsyncStream<Void>.makeStream()

            async let holder: Void = client.withTransaction(logger: TestDatabase.logger) { connection in
                #expect(try await usage.lockAccountsAndReadAnswers([request], on: connection).isEmpty)
                try await usage.store([UsageRequests.FirstAnswer(answer: answer, request: request)], at: Date(), on: connection)
                holding.yield()
                try await Self.waitUntilSomeoneWaitsForALock(client)
            }
            for await _ in held { break }
            let stored = try await client.withTransaction(logger: TestDatabase.logger) { connection in
                try await usage.lockAccountsAndReadAnswers([request], on: connection)
            }
            try await holder
            #expect(stored.count == 1)
            #expect(stored.first?.key.account == account && stored.first?.key.idempotencyKey == "request-1")
            #expect(stored.first?.value.answer == answer)
        }
    }

    /// An apply reads the owner's ledger under the owner's lock; a spend committed while it waited must be in what
    /// it reads, or the credit rules would decide on a balance that no longer exists.
    @Test("an apply that waited for the owner's lock reads the ledger entry the holder posted meanwhile")
    func ledgerSnapshotSeesWhatTheHolderPosted() async throws {
        try await TestDatabase.withMigratedClient(maximumConnections: 3) { client in
            let ledger = CreditLedger(catalogue: try TierCatalogue.load(path: "config/tiers.yml").get(), logger: TestDatabase.logger)
            let account = AccountID(UUID())
            let bucket = "topup:\(account.text):ai_requests"
            try await client.query(
                """
                INSERT INTO credit_buckets (key, meter, kind, account_id, valid_from)
                VALUES (\(bucket), 'ai_requests', 'topup', \(account.text), now() - interval '1 day')
                """, logger: TestDatabase.logger)
            let (held, holding) = AsyncStream<Void>.makeStream()

            async let holder: Void = client.withTransaction(logger: TestDatabase.logger) { connection in
                try await ledger.lockAccount(account, on: connection)
                let spend = LedgerEntry(operationKey: "spend:request-1:0", bucket: bucket, delta: -3, reason: "usage")
                try await ledger.apply([.post(spend, opening: nil)], at: Date(), on: connection)
                holding.yield()
                try await Self.waitUntilSomeoneWaitsForALock(client)
            }
            for await _ in held { break }
            let snapshot = try await client.withTransaction(logger: TestDatabase.logger) { connection in
                try await ledger.snapshot(
                    savingDerivation: .init(originalTransactionId: "none", account: account, state: nil, transactionIds: [], contribution: nil),
                    now: Date(), on: connection)
            }
            try await holder
            #expect(snapshot.ledger.buckets.map(\.key) == [bucket])
            #expect(snapshot.ledger.entries.map(\.operationKey) == ["spend:request-1:0"])
            #expect(snapshot.ledger.entries.map(\.delta) == [-3])
            // A top-up live now and nothing else: the ledger is all the account has (sql/0054).
            #expect(!snapshot.ownerHasMore)
        }
    }

    /// Waits until a transaction of this test's database waits for an advisory lock (other tests' databases share
    /// the cluster's lock table).
    static func waitUntilSomeoneWaitsForALock(_ client: PostgresClient) async throws {
        try await eventually("another transaction waits for the lock") {
            let rows = try await client.query(
                """
                SELECT count(*)::int FROM pg_locks
                WHERE locktype = 'advisory' AND NOT granted
                    AND database = (SELECT oid FROM pg_database WHERE datname = current_database())
                """, logger: TestDatabase.logger)
            for try await waiting in rows.decode(Int.self) { return waiting == 1 }
            return false
        }
    }
}
