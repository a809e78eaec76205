import Foundation
import Persistence
import PostgresNIO
import Subscriptions
import Testing

@Suite("The subscription lock, on real PostgreSQL")
struct SubscriptionLockTests {
    @Test("a writer that waited for the lock reads what the holder committed — also for a subscription that had no row")
    func waiterReadsCommittedState() async throws {
        try await StorekeeperHarness.run(worker: false) { harness in
            let store = SubscriptionStore(client: harness.client, logger: TestDatabase.logger)
            let id = "lock-\(UUID().uuidString)"
            let saved = SubscriptionState(
                originalTransactionId: id, accountId: UUID(), productId: "pro.monthly", environment: "Sandbox",
                status: .active, willRenew: true, autoRenewProductId: "pro.monthly", pendingProductId: nil,
                purchaseDate: Date(timeIntervalSince1970: 1_700_000_000), expiresAt: Date(timeIntervalSince1970: 1_702_592_000),
                gracePeriodExpiresAt: nil, isTrial: false, ownership: "PURCHASED", latestTransactionId: id,
                lastEventType: "SUBSCRIBED", lastEvent: EventPosition(signedDate: 1_700_000_000_000, eventId: "e1"),
                endReason: nil, price: 9990)
            let holderLocked = AsyncStream<Void>.makeStream()
            let waiterRead = try await withThrowingTaskGroup(of: SubscriptionState??.self) { group in
                group.addTask {
                    try await harness.client.withTransaction(logger: TestDatabase.logger) { connection in
                        #expect(try await store.lockedSubscription(id, on: connection) == nil)
                        holderLocked.continuation.yield()
                        // Commit only once the other writer waits for the lock: its statement has begun by then.
                        try await eventually("the second writer waiting for the lock") {
                            try await harness.count("SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted") == 1
                        }
                        try await store.save(saved, on: connection)
                    }
                    return nil
                }
                for await _ in holderLocked.stream { break }
                group.addTask {
                    try await harness.client.withTransaction(logger: TestDatabase.logger) { connection in
                        .some(try await store.lockedSubscription(id, on: connection))
                    }
                }
                var read: SubscriptionState?? = nil
                for try await result in group where result != nil { read = result }
                return read
            }
            #expect(waiterRead == .some(saved))
        }
    }
}
