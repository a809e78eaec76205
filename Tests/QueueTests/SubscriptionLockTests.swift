import Foundation
import LocalSigning
import Persistence
import PostgresNIO
import Subscriptions
import Testing

@testable import IntegrationSupport

@Suite("The subscription lock, on real PostgreSQL")
struct SubscriptionLockTests {
    /// How the first writer takes the lock: as every writer does, or in the statement that reads the notification to
    /// apply (the worker's apply path).
    enum Holder: CaseIterable, Sendable { case lockedSubscription, storedNotification }
    /// How the second writer waits: as every writer does, or reading the notification to apply with its
    /// subscription's history (sql/0019: the lock, then the history by a later statement).
    enum Waiter: CaseIterable, Sendable { case lockedSubscription, storedNotification }

    /// Advisory locks on the test's database (other tests run beside it on the same server).
    @Test(
        "a writer that waited for the lock reads what the holder committed — also for a subscription that had no row",
        arguments: Holder.allCases, Waiter.allCases)
    func waiterReadsCommittedState(holder: Holder, waiter: Waiter) async throws {
        try await StorekeeperHarness.run(worker: false) { harness in
            let store = SubscriptionStore(client: harness.client, logger: TestDatabase.logger)
            let id = String(Int.random(in: 3_000_000_000...3_999_999_999))
            let notificationUUID = UUID()
            if holder == .storedNotification || waiter == .storedNotification {
                let event = SimulatedEvent.scenario(
                    .subscribe, subscription: harness.subscription(account: nil, originalTransactionId: id), at: Date())
                let body = try harness.signer.requestBody(for: event, notificationUUID: notificationUUID)
                try await harness.withHTTP { client in
                    let response = try await client.postNotification(body)
                    #expect(response.status == .ok)
                }
            }
            let saved = Self.anySubscription(id)
            let holderLocked = AsyncStream<Void>.makeStream()
            let waiterRead = try await withThrowingTaskGroup(of: SubscriptionState??.self) { group in
                group.addTask {
                    try await harness.client.withTransaction(logger: TestDatabase.logger) { connection in
                        switch holder {
                        case .lockedSubscription:
                            #expect(try await store.lockedSubscription(id, on: connection) == nil)
                        case .storedNotification:
                            let stored = try await NotificationStore(logger: TestDatabase.logger)
                                .notificationLockingSubscription(notificationUUID, on: connection)
                            #expect(stored?.lockedSubscription == id)
                            #expect(try await store.lockedSubscription(id, on: connection, lockHeld: true) == nil)
                        }
                        holderLocked.continuation.yield()
                        // Commit only once the other writer waits for the lock: its statement has begun by then.
                        try await eventually("the second writer waiting for the lock") {
                            try await harness.count(TestDatabase.advisoryLocksSQL + " AND NOT granted") == 1
                        }
                        try await store.save(saved, on: connection)
                    }
                    return nil
                }
                for await _ in holderLocked.stream { break }
                group.addTask {
                    try await harness.client.withTransaction(logger: TestDatabase.logger) { connection in
                        switch waiter {
                        case .lockedSubscription:
                            return .some(try await store.lockedSubscription(id, on: connection))
                        case .storedNotification:
                            let stored = try await NotificationStore(logger: TestDatabase.logger)
                                .notificationLockingSubscription(notificationUUID, on: connection)
                            #expect(stored?.lockedSubscription == id)
                            // The notification itself is among the stored events the history holds.
                            #expect(stored?.history?.events.count == 1)
                            return .some(stored?.history?.subscription)
                        }
                    }
                }
                var read: SubscriptionState?? = nil
                for try await result in group where result != nil { read = result }
                return read
            }
            #expect(waiterRead == .some(saved))
        }
    }

    /// The applies of a shared transaction read their notifications in one statement (``NotificationStore/notificationsLockingSubscriptions(_:in:on:)``).
    @Test(
        "a shared transaction's read: each answer in its place, a missing notification nil, every lock held; a lock waited for shows what its holder committed"
    )
    func groupRead() async throws {
        try await StorekeeperHarness.run(worker: false) { harness in
            let store = SubscriptionStore(client: harness.client, logger: TestDatabase.logger)
            let ids = (0..<2).map { _ in String(Int.random(in: 3_000_000_000...3_999_999_999)) }
            let uuids = [UUID(), UUID()]
            try await harness.withHTTP { client in
                for (id, uuid) in zip(ids, uuids) {
                    let event = SimulatedEvent.scenario(
                        .subscribe, subscription: harness.subscription(account: nil, originalTransactionId: id), at: Date())
                    let response = try await client.postNotification(try harness.signer.requestBody(for: event, notificationUUID: uuid))
                    #expect(response.status == .ok)
                }
            }
            let saved = Self.anySubscription(ids[1])
            let holderLocked = AsyncStream<Void>.makeStream()
            let reads = try await withThrowingTaskGroup(of: [NotificationStore.LockedRead?].self) { group in
                // Another writer holds the second subscription's lock and saves it once the group's read waits.
                group.addTask {
                    try await harness.client.withTransaction(logger: TestDatabase.logger) { connection in
                        #expect(try await store.lockedSubscription(ids[1], on: connection) == nil)
                        holderLocked.continuation.yield()
                        try await eventually("the group's read waiting for the lock") {
                            try await harness.count(TestDatabase.advisoryLocksSQL + " AND NOT granted") == 1
                        }
                        try await store.save(saved, on: connection)
                    }
                    return []
                }
                for await _ in holderLocked.stream { break }
                group.addTask {
                    try await harness.client.withTransaction(logger: TestDatabase.logger) { connection in
                        let reads = try await NotificationStore(logger: TestDatabase.logger).notificationsLockingSubscriptions(
                            [.init(uuid: uuids[0]), .init(uuid: UUID()), .init(uuid: uuids[1])], on: connection)
                        // Both locks are this transaction's until it ends.
                        #expect(try await harness.count(TestDatabase.advisoryLocksSQL + " AND granted") == 2)
                        return reads
                    }
                }
                var answer: [NotificationStore.LockedRead?] = []
                for try await result in group where !result.isEmpty { answer = result }
                return answer
            }
            #expect(reads.count == 3)
            #expect(reads[0]?.lockedSubscription == ids[0] && reads[0]?.history?.subscription == nil)
            #expect(reads[0]?.history?.events.map(\.id) == [uuids[0].uuidString.lowercased()])
            #expect(reads[1] == nil)
            #expect(reads[2]?.lockedSubscription == ids[1])
            #expect(reads[2]?.history?.subscription == saved)
        }
    }

    /// A subscription row to save where none is stored yet.
    static func anySubscription(_ id: String) -> SubscriptionState {
        SubscriptionState(
            originalTransactionId: id, accountId: AccountID(UUID()), productId: "pro.monthly", environment: .sandbox,
            status: .active, willRenew: true, autoRenewProductId: "pro.monthly", pendingProductId: nil,
            purchaseDate: Date(timeIntervalSince1970: 1_700_000_000), expiresAt: Date(timeIntervalSince1970: 1_702_592_000),
            gracePeriodExpiresAt: nil, isTrial: false, ownership: .purchased, latestTransactionId: id,
            lastEventType: NotificationType("SUBSCRIBED"), lastEvent: EventPosition(signedDate: 1_700_000_000_000, eventId: "e1"),
            endReason: nil, price: 9990)
    }

    @Test("reading a notification that names no subscription locks nothing")
    func notificationWithoutSubscription() async throws {
        try await StorekeeperHarness.run(worker: false) { harness in
            let notificationUUID = UUID()
            let test = SimulatedEvent(
                notificationType: "TEST", subtype: nil, status: nil, signedDate: 1_767_225_600_000, transaction: nil, renewalInfo: nil)
            let body = try harness.signer.requestBody(for: test, notificationUUID: notificationUUID)
            try await harness.withHTTP { client in
                let response = try await client.postNotification(body)
                #expect(response.status == .ok)
            }
            try await harness.client.withTransaction(logger: TestDatabase.logger) { connection in
                let stored = try await NotificationStore(logger: TestDatabase.logger).notificationLockingSubscription(
                    notificationUUID, on: connection)
                guard case .verified(let notification) = stored?.notification else {
                    Issue.record("the TEST notification was not stored as verified")
                    return
                }
                #expect(notification.payload.notificationType == "TEST")
                #expect(stored?.lockedSubscription == nil)
                #expect(try await harness.count(TestDatabase.advisoryLocksSQL) == 0)
            }
        }
    }

    @Test("a subscription saved with App Store times (whole milliseconds) reads back equal, whatever the milliseconds")
    func millisecondsReadBackEqual() async throws {
        try await StorekeeperHarness.run(worker: false) { harness in
            let store = SubscriptionStore(client: harness.client, logger: TestDatabase.logger)
            // 1798172874363 is stored as ….362999 when written as it is; the others are spread over the years ahead.
            var random = SystemRandomNumberGenerator()
            let milliseconds: [Int64] =
                [1_798_172_874_363] + (0..<200).map { _ in Int64.random(in: 1_700_000_000_000...2_100_000_000_000, using: &random) }
            for (index, value) in milliseconds.enumerated() {
                func time(_ offset: Int64) -> Date { Date(timeIntervalSince1970: Double(value + offset) / 1000) }
                let id = "ms-\(index)"
                let saved = SubscriptionState(
                    originalTransactionId: id, accountId: AccountID(UUID()), productId: "pro.monthly", environment: .sandbox,
                    status: .gracePeriod, willRenew: true, autoRenewProductId: "pro.monthly", pendingProductId: nil,
                    purchaseDate: time(-2_592_000_000), expiresAt: time(0), gracePeriodExpiresAt: time(1_296_000_000), isTrial: false,
                    ownership: .purchased, latestTransactionId: id, lastEventType: NotificationType("DID_FAIL_TO_RENEW"),
                    lastEvent: EventPosition(signedDate: value, eventId: "e1"), endReason: nil, revokedAt: time(7),
                    price: 9990, billingPeriodKey: "\(id).\(value)", accessUntil: time(1_296_000_000))
                try await harness.client.withConnection { try await store.save(saved, on: $0) }
                #expect(try await store.subscription(id) == saved, "read back unequal at \(value) ms")
            }
        }
    }

    /// A spend group of the account a subscription leaves may be spending the subscription's cycle credits: the apply
    /// that moves it waits for that account's lock as well as the new owner's, so neither reads balances the other is
    /// changing (the kept balances of sql/0041 are updated by both).
    @Test("an apply that moves a subscription to another account waits for the lock of the account it leaves")
    func transferWaitsForOwnerBefore() async throws {
        try await StorekeeperHarness.run { harness in
            let before = UUID()
            var subscription = harness.subscription(account: before)
            var clock = Date().addingTimeInterval(-3600)
            let subscribed = try harness.signer.requestBody(for: SimulatedEvent.scenario(.subscribe, subscription: subscription, at: clock))
            clock = clock.addingTimeInterval(60)
            let expired = try harness.signer.requestBody(
                for: SimulatedEvent.scenario(
                    .expire, subscription: subscription, currentPeriod: DateInterval(start: clock.addingTimeInterval(-60), end: clock), at: clock))
            try await harness.withHTTP { client in
                for body in [subscribed, expired] {
                    let response = try await client.postNotification(body)
                    #expect(response.status == .ok)
                }
            }
            try await harness.waitApplied(2)
            clock = clock.addingTimeInterval(60)
            subscription.accountId = UUID()
            var resubscribe = SimulatedEvent.scenario(.subscribe, subscription: subscription, at: clock)
            resubscribe.subtype = "RESUBSCRIBE"
            let resubscribed = try harness.signer.requestBody(for: resubscribe)
            let locked = AsyncStream<Void>.makeStream()
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask {
                    try await harness.client.withTransaction(logger: TestDatabase.logger) { connection in
                        // As a spend group of the account holds it.
                        try await connection.query(
                            "SELECT pg_advisory_xact_lock(hashtextextended(\("account:" + before.uuidString.lowercased()), 0))",
                            logger: TestDatabase.logger)
                        locked.continuation.yield()
                        try await eventually("the apply waiting for the lock of the account the subscription leaves") {
                            try await harness.count(TestDatabase.advisoryLocksSQL + " AND NOT granted") == 1
                        }
                        #expect(try await harness.count("SELECT count(*) FROM notifications WHERE apply_outcome IS NOT NULL") == 2)
                    }
                }
                for await _ in locked.stream { break }
                try await harness.withHTTP { client in
                    let response = try await client.postNotification(resubscribed)
                    #expect(response.status == .ok)
                }
                try await group.waitForAll()
            }
            try await harness.waitApplied(3)
            #expect(
                try await harness.count(
                    "SELECT count(*) FROM account_transfers WHERE from_account = '\(before.uuidString.lowercased())'") == 1)
        }
    }
}
