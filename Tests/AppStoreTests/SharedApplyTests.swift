import AppStoreModels
import Application
import Foundation
import LocalSigning
import PostgresNIO
import StorekeeperRuntime
import Subscriptions
import TestSupport
import Testing

@testable import IntegrationSupport
@testable import Jobs

@Suite("Applies sharing a transaction, on real PostgreSQL")
struct SharedApplyTests {
    @Test("a backlog of distinct subscriptions is applied four to a transaction; one that fails rolls its group back and the rest apply alone")
    func backlog() async throws {
        try await StorekeeperHarness.run(worker: false, environment: ["STOREKEEPER_APPLIES_PER_TRANSACTION": "4"]) { harness in
            let accounts = (0..<5).map { _ in UUID() }
            try await Self.send(accounts.map { .scenario(.subscribe, subscription: harness.subscription(account: $0), at: Date()) }, to: harness)
            // A sixth job, claimed with the fifth: its notification is not stored, so its apply discards it — a throw
            // that rolls back the transaction the two share.
            let queue = harness.components.queue
            let missing = NotificationInbox.ApplyArguments(notificationUUID: UUID())
            _ = try await queue.client.withConnection {
                try await queue.enqueue(try NewJob(kind: NotificationInbox.applyJobKind, arguments: missing), on: $0)
            }
            try await Self.applyBacklog(harness, until: "SELECT count(*) FROM jobs")
            #expect(try await harness.count("SELECT count(*) FROM job_history WHERE state = 'completed'") == 5)
            #expect(try await harness.count("SELECT count(*) FROM job_history WHERE state = 'discarded'") == 1)
            #expect(try await harness.count("SELECT count(*) FROM notifications WHERE apply_outcome = 'applied'") == 5)
            // The first four in one transaction, the fifth in one of its own after its group rolled back.
            #expect(try await harness.count("SELECT count(DISTINCT xmin::text) FROM notifications") == 2)
            try await harness.withHTTP { client in
                for account in accounts {
                    let response = try await client.getWithKey("/v1/accounts/\(account)/status")
                    let status = try response.answer(StatusAnswer.self)
                    #expect(status.state == "subscribed" && status.entitled == true, "\(String(buffer: response.body))")
                }
            }
            // The status each event carries, worked out with the posts left to the group's flush, is the one read.
            try await Self.expectEventsCarryTheirStatus(accounts, harness)
        }
    }

    @Test(
        "one transaction's applies store their events in the applies' order: a subscription's (left to the last write) before a top-up's of the same account (stored at once), before the next subscription's"
    )
    func eventsInApplyOrder() async throws {
        try await StorekeeperHarness.run(worker: false) { harness in
            let account = UUID()
            let first = harness.subscription(account: account)
            // Another account's: two subscriptions of one account in a group would add an overlap event of neither.
            let second = harness.subscription(account: UUID())
            try await Self.send(
                [
                    .scenario(.subscribe, subscription: first, at: Date()), Self.topUp(of: account, transactionId: "7100001"),
                    .scenario(.subscribe, subscription: second, at: Date()),
                ], to: harness)
            try await Self.applyBacklog(harness, until: "SELECT count(*) FROM jobs WHERE kind = 'apply-notification'")
            #expect(try await harness.count("SELECT count(DISTINCT xmin::text) FROM notifications") == 1, "the three applied in one transaction")
            #expect(try await harness.count("SELECT count(*) FROM notifications WHERE apply_outcome = 'topped_up'") == 1)
            let rows = try await harness.client.query(
                "SELECT coalesce(subscription_id, '') FROM events ORDER BY sequence", logger: TestDatabase.logger)
            var order: [String] = []
            for try await subscription in rows.decode(String.self) {
                let source =
                    subscription == first.originalTransactionId ? "first" : subscription == second.originalTransactionId ? "second" : "top-up"
                if order.last != source { order.append(source) }
            }
            #expect(order == ["first", "top-up", "second"], "events by sequence")
            // The top-up's event, stored at once, carries the status with the subscription's posts before it.
            try await Self.expectEventsCarryTheirStatus([account, second.accountId].compactMap { $0 }, harness)
        }
    }

    @Test(
        "a refund's posts wait in the group, and a top-up of the same account after it finds them posted: its event, stored at once, carries the status a read gives"
    )
    func refundThenTopUp() async throws {
        try await StorekeeperHarness.run(worker: false) { harness in
            let account = UUID()
            let subscription = harness.subscription(account: account)
            try await Self.send([.scenario(.subscribe, subscription: subscription, at: Date())], to: harness)
            try await Self.applyBacklog(harness, until: "SELECT count(*) FROM jobs WHERE kind = 'apply-notification'")
            // The refund ends the cycle's window (its posts wait: the owner's status is known without a read); the
            // top-up then reads the status for its event, which must not show the cycle's credits.
            try await Self.send(
                [.scenario(.refund, subscription: subscription, at: Date()), Self.topUp(of: account, transactionId: "7100002")], to: harness)
            try await Self.applyBacklog(harness, until: "SELECT count(*) FROM jobs WHERE kind = 'apply-notification'")
            #expect(try await harness.count("SELECT count(DISTINCT xmin::text) FROM notifications") == 2, "the two in one transaction")
            #expect(try await harness.count("SELECT count(*) FROM notifications WHERE apply_outcome = 'topped_up'") == 1)
            #expect(
                try await harness.count("SELECT count(*) FROM credit_buckets WHERE kind = 'cycle' AND valid_until <= now()") == 1,
                "the refund ended the cycle's window")
            try await Self.expectEventsCarryTheirStatus([account], harness)
        }
    }

    @Test("a group whose middle job lost its claim throws and writes nothing of any of its applies")
    func groupWithLostClaim() async throws {
        try await StorekeeperHarness.run(worker: false) { harness in
            try await Self.send(
                (0..<3).map { _ in .scenario(.subscribe, subscription: harness.subscription(account: UUID()), at: Date()) }, to: harness)
            let queue = harness.components.queue
            let jobs = try await queue.claim(limit: 3, workerID: UUID()).sorted { $0.id < $1.id }
            try #require(jobs.count == 3)
            // Rescued and claimed again elsewhere, as far as this attempt can tell.
            _ = try await harness.client.query("UPDATE jobs SET attempt = attempt + 1 WHERE id = \(jobs[1].id)", logger: TestDatabase.logger)
            let apply = ApplyNotificationJob(
                client: harness.client, writer: harness.components.writer, credits: harness.components.credits, refunds: nil,
                jobsPerTransaction: 8, logger: TestDatabase.logger)
            let failure = await #expect(throws: PostgresTransactionError.self) {
                try await harness.client.withTransaction(logger: TestDatabase.logger) { connection in
                    try await apply.run(jobs.map { JobExecution(job: $0, queue: queue) }, on: connection)
                }
            }
            #expect((failure?.closureError as? JobQueueError)?.code == .lostClaim, "\(String(describing: failure))")
            for sql in [
                "SELECT count(*) FROM notifications WHERE applied_at IS NOT NULL", "SELECT count(*) FROM subscriptions",
                "SELECT count(*) FROM events", "SELECT count(*) FROM job_history",
            ] {
                #expect(try await harness.count(sql) == 0, "rolled back: \(sql)")
            }
            #expect(try await harness.count("SELECT count(*) FROM jobs WHERE state = 'running'") == 3)
        }
    }

    @Test(
        "a group's credit posts wait for one round trip; a row of theirs the database skips rolls the group back, and each apply runs alone, its events carrying the status a read gives"
    )
    func deferredPosts() async throws {
        try await StorekeeperHarness.run(worker: false, environment: ["STOREKEEPER_APPLIES_PER_TRANSACTION": "8"]) { harness in
            let accounts = (0..<3).map { _ in UUID() }
            let subscriptions = accounts.map { harness.subscription(account: $0) }
            try await Self.send(subscriptions.map { .scenario(.subscribe, subscription: $0, at: Date()) }, to: harness)
            // The second subscription's ledger rows are skipped, as a key posted already would be: the group, which
            // counted them in the status its events carry, must not commit; alone, the post says what it wrote.
            let skipped = subscriptions[1].originalTransactionId
            for sql in [
                "CREATE FUNCTION skip_row() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RETURN NULL; END $$",
                "CREATE TRIGGER skip_rows BEFORE INSERT ON credit_ledger FOR EACH ROW WHEN (NEW.bucket LIKE '%\(skipped)%') EXECUTE FUNCTION skip_row()",
            ] {
                try await harness.client.query(PostgresQuery(unsafeSQL: sql), logger: TestDatabase.logger)
            }
            try await Self.applyBacklog(harness, until: "SELECT count(*) FROM jobs")
            #expect(try await harness.count("SELECT count(*) FROM notifications WHERE apply_outcome = 'applied'") == 3)
            #expect(try await harness.count("SELECT count(DISTINCT xmin::text) FROM notifications") == 3, "the group rolled back; each alone")
            #expect(try await harness.count("SELECT count(*) FROM credit_buckets WHERE original_transaction_id = '\(skipped)'") > 0)
            #expect(
                try await harness.count(
                    "SELECT count(*) FROM credit_ledger l JOIN credit_buckets b ON b.key = l.bucket WHERE b.original_transaction_id = '\(skipped)'")
                    == 0)
            #expect(try await harness.count("SELECT count(*) FROM credit_ledger") > 0, "the others' grants")
            try await Self.expectEventsCarryTheirStatus(accounts, harness)

            // Without the skipping: two subscriptions of one account (the second's change posts the first's first)
            // and one of another commit in one transaction, each event with the status a read gives.
            try await harness.client.query("DROP TRIGGER skip_rows ON credit_ledger", logger: TestDatabase.logger)
            let (shared, single) = (UUID(), UUID())
            var other = harness.subscription(account: shared)
            other.productId = "pro.annual"
            try await Self.send(
                [harness.subscription(account: shared), harness.subscription(account: single), other].map {
                    .scenario(.subscribe, subscription: $0, at: Date())
                }, to: harness)
            try await Self.applyBacklog(harness, until: "SELECT count(*) FROM jobs")
            #expect(try await harness.count("SELECT count(*) FROM notifications WHERE apply_outcome = 'applied'") == 6)
            #expect(try await harness.count("SELECT count(DISTINCT xmin::text) FROM notifications") == 4, "the three in one transaction")
            try await Self.expectEventsCarryTheirStatus([shared, single], harness)
        }
    }

    /// POSTs `events` as Apple's notifications, each accepted.
    static func send(_ events: [SimulatedEvent], to harness: StorekeeperHarness) async throws {
        try await harness.withHTTP { client in
            for event in events {
                let answer = try await client.postNotification(try harness.signer.requestBody(for: event))
                #expect(try answer.answer(IntakeAnswer.self).status == "accepted")
            }
        }
    }

    /// A consumable of 100 credits bought by `account`: a top-up, whose apply stores its events at once.
    static func topUp(of account: UUID, transactionId: String) -> SimulatedEvent {
        let signed = Int64(Date().timeIntervalSince1970 * 1000)
        var transaction = TransactionPayload(
            transactionId: transactionId, originalTransactionId: transactionId, productId: "credits.100", bundleId: StorekeeperHarness.bundleId,
            environment: .sandbox, signedDate: signed)
        transaction.type = "Consumable"
        transaction.appAccountToken = account.uuidString.lowercased()
        return SimulatedEvent(
            notificationType: "ONE_TIME_CHARGE", subtype: nil, status: nil, signedDate: signed, transaction: transaction, renewalInfo: nil)
    }

    /// Each account's newest event carries the status `GET /v1/accounts/{id}/status` answers
    /// (``ScenarioPipelineTests/compareNewestEvent(of:harness:client:label:)``), and there is one to compare.
    static func expectEventsCarryTheirStatus(_ accounts: [UUID], _ harness: StorekeeperHarness) async throws {
        try await harness.withHTTP { client in
            for account in accounts {
                let compared = try await ScenarioPipelineTests.compareNewestEvent(
                    of: AccountID(account), harness: harness, client: client, label: "account \(account)")
                #expect(compared, "account \(account): an event to compare")
            }
        }
    }

    /// Runs a worker that claims up to 8 jobs at once until `remaining` counts none: a backlog enqueued before, claimed
    /// together, runs in shared transactions.
    static func applyBacklog(_ harness: StorekeeperHarness, until remaining: String) async throws {
        let worker = harness.components.worker(options: .init(concurrency: 8, pollInterval: .milliseconds(200)))
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await worker.run() }
            defer { group.cancelAll() }
            try await eventually(timeout: .seconds(10), "every job to leave the queue") { try await harness.count(remaining) == 0 }
        }
    }
}
