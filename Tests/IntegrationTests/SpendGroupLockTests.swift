import Foundation
import Persistence
import PostgresNIO
import StorekeeperRuntime
import Subscriptions
import Testing

@Suite("A group of spends takes its locks and reads its stored answers in one round trip, on real PostgreSQL")
struct SpendGroupLockTests {
    /// Two `serve` processes can spend under the same idempotency key at once. The second group waits for the
    /// account's lock; once it has it, it must see the answer the first group committed while it waited, or it would
    /// spend again under that key. A single query could not see it: it reads as of its start, before the wait.
    @Test("a group that waited for an account's lock reads the answer the holder committed meanwhile")
    func readsWhatTheHolderCommitted() async throws {
        try await TestDatabase.withFreshDatabase { url in
            try await PostgresClient.withRunning(url.clientConfiguration(maximumConnections: 3), logger: TestDatabase.logger) { client in
                try await SchemaMigrator(client: client, directory: SchemaMigrator.defaultDirectory(), logger: TestDatabase.logger).migrate()
                let usage = UsageRequests(logger: TestDatabase.logger)
                let account = AccountID(UUID())
                let request = UsageRequests.Request(account: account, meter: "ai_requests", amount: 1, idempotencyKey: "request-1")
                let answer = UsageRequests.Answer(outcome: .spent, meter: "ai_requests", remaining: 41)
                let (held, holding) = AsyncStream<Void>.makeStream()

                async let holder: Void = client.withTransaction(logger: TestDatabase.logger) { connection in
                    #expect(try await usage.lockAccountsAndReadAnswers([request], on: connection).isEmpty)
                    try await usage.store([(answer, request)], posting: [], on: connection)
                    holding.yield()
                    try await eventually("the second group waits for the account's lock") {
                        let rows = try await client.query(
                            "SELECT count(*)::int FROM pg_locks WHERE locktype = 'advisory' AND NOT granted", logger: TestDatabase.logger)
                        for try await waiting in rows.decode(Int.self) { return waiting == 1 }
                        return false
                    }
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
    }
}
