import Foundation
import Persistence
import PostgresNIO
import Subscriptions
import Testing

@testable import IntegrationSupport

/// A rescinded consent stored while a subscription first names its app transaction: whichever commits first, the
/// other sees it, so the rescission always reaches the account — never left unlinked because each transaction missed
/// the other's uncommitted row.
@Suite("Consent rescissions link under concurrency, on real PostgreSQL")
struct ConsentRescissionLinkTests {
    enum First: CaseIterable, Sendable { case rescission, subscription }

    @Test("the second writer waits for the first and links what it committed", arguments: First.allCases)
    func linkedWhateverCommitsFirst(first: First) async throws {
        try await StorekeeperHarness.run(worker: false) { harness in
            let rescissions = ConsentRescissions(logger: TestDatabase.logger)
            let store = SubscriptionStore(client: harness.client, logger: TestDatabase.logger)
            let appTransactionId = String(Int.random(in: 700_000_000_000_000_000...799_999_999_999_999_999))
            let account = AccountID(UUID())
            let id = String(Int.random(in: 3_000_000_000...3_999_999_999))
            let subscription = SubscriptionState(
                originalTransactionId: id, accountId: account, productId: "pro.monthly", environment: .sandbox, status: .active, willRenew: true,
                autoRenewProductId: "pro.monthly", pendingProductId: nil, purchaseDate: Date(), expiresAt: Date().addingTimeInterval(86_400),
                gracePeriodExpiresAt: nil, isTrial: false, ownership: .purchased, latestTransactionId: id,
                lastEventType: NotificationType("SUBSCRIBED"), lastEvent: EventPosition(signedDate: 1, eventId: "e1"), endReason: nil,
                appTransactionId: appTransactionId)
            // What the subscription's apply does: save its row, then link what waits for its app transaction.
            @Sendable func subscribe(_ connection: PostgresConnection) async throws -> [ConsentRescissions.Rescission] {
                let linked = try await rescissions.link(
                    appTransactionId: appTransactionId, environment: .sandbox, to: account, now: Date(), on: connection)
                try await store.save(subscription, on: connection)
                return linked
            }
            @Sendable func rescind(_ connection: PostgresConnection) async throws -> ConsentRescissions.Rescission {
                try await rescissions.record(
                    notificationUUID: UUID().uuidString.lowercased(), appTransactionId: appTransactionId, environment: .sandbox,
                    rescindedAt: Date(), now: Date(), on: connection)
            }
            let firstWrote = AsyncStream<Void>.makeStream()
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask {
                    try await harness.client.withTransaction(logger: TestDatabase.logger) { connection in
                        let linked: [AccountID?]
                        switch first {
                        case .rescission: linked = [try await rescind(connection).account]
                        case .subscription: linked = try await subscribe(connection).map(\.account)
                        }
                        #expect(linked.allSatisfy { $0 == nil }, "nothing to link yet")
                        firstWrote.continuation.yield()
                        // Commit only once the other writer waits for the app transaction's lock.
                        try await eventually("the second writer waiting for the lock") {
                            try await harness.count(TestDatabase.advisoryLocksSQL + " AND NOT granted") == 1
                        }
                    }
                }
                for await _ in firstWrote.stream { break }
                group.addTask {
                    let linked: [AccountID?] = try await harness.client.withTransaction(logger: TestDatabase.logger) { connection in
                        switch first {
                        case .rescission: return try await subscribe(connection).map(\.account)
                        case .subscription: return [try await rescind(connection).account]
                        }
                    }
                    // The waiting rescission is linked by the subscription; or the committed subscription is found.
                    #expect(linked == [account])
                }
                try await group.waitForAll()
            }
            #expect(try await harness.count("SELECT count(*) FROM consent_rescissions WHERE account_id = '\(account.text)'") == 1)
        }
    }
}
