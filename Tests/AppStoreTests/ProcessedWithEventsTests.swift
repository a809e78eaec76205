import Application
import Events
import Foundation
import LocalSigning
import Persistence
import PostgresNIO
import Subscriptions
import Testing

@testable import IntegrationSupport
@testable import Jobs

/// The applies of a transaction store their events in the statement that records their outcomes and completes their
/// jobs (`EventLog.append(_:markingProcessed:on:)`): each of the three writes must happen — or, for a lost claim, none.
@Suite("Events appended with the apply's outcome and completion")
struct ProcessedWithEventsTests {
    @Test(
        "new events, the outcome and the completion; then keys stored already: no event, the first outcome kept, the job completed; a lost claim: nothing"
    )
    func appendMarkingProcessed() async throws {
        try await StorekeeperHarness.run(worker: false) { harness in
            let account = try #require(AccountID(UUID().uuidString.lowercased()))
            let event = SimulatedEvent.scenario(.subscribe, subscription: harness.subscription(account: UUID()), at: Date())
            let uuid = UUID()
            try await harness.withHTTP { client in
                let answer = try await client.postNotification(try harness.signer.requestBody(for: event, notificationUUID: uuid))
                #expect((try? answer.answer(IntakeAnswer.self))?.status == "accepted")
            }
            let queue = harness.components.queue
            let log = EventLog(logger: TestDatabase.logger)
            let drafts = ["first", "second"].map { key in
                EventDraft(
                    type: .subscriptionStarted, key: "\(uuid):\(key)", account: account, subscription: "1000", environment: .sandbox,
                    change: EventChange(productId: "monthly"), cause: EventCause(eventId: uuid.uuidString, signedDate: Date()))
            }
            let entries = drafts.map { (draft: $0, body: #"{"key":"\#($0.key)"}"#, createdAt: Date()) }
            func append(_ outcome: NotificationStore.ApplyOutcome, for job: ClaimedJob) async throws -> (
                events: [EventLog.Appended], jobCompleted: Bool
            ) {
                let (events, completed) = try await harness.client.withTransaction(logger: TestDatabase.logger) { connection in
                    try await log.append(
                        entries, markingProcessed: [.init(uuid, outcome: outcome, jobID: job.id, attempt: job.attempt)], on: connection)
                }
                #expect(completed.count == 1)
                return (events, completed == [true])
            }

            let first = try #require(try await queue.claim(limit: 1, workerID: UUID()).first)
            let appended = try await append(.applied, for: first)
            #expect(appended.jobCompleted)
            #expect(appended.events.map(\.key) == drafts.map(\.key))
            #expect(Set(appended.events.map(\.account)) == [account.text])
            for (event, entry) in zip(appended.events, entries) {
                let stored = try await harness.client.withConnection { try await log.event(event.id, on: $0) }
                #expect(stored?.body == entry.body && stored?.sequence == event.sequence)
            }
            #expect(try await harness.count("SELECT count(*) FROM notifications WHERE apply_outcome = 'applied' AND applied_at IS NOT NULL") == 1)
            #expect(try await harness.count("SELECT count(*) FROM job_history WHERE state = 'completed'") == 1)
            #expect(try await harness.count("SELECT count(*) FROM jobs") == 0)

            // Run again (an operator's requeue): the keys are stored, so the insert appends nothing.
            let again = try NewJob(kind: NotificationInbox.applyJobKind, arguments: NotificationInbox.ApplyArguments(notificationUUID: uuid))
            _ = try await harness.client.withConnection { try await queue.enqueue(again, on: $0) }
            let second = try #require(try await queue.claim(limit: 1, workerID: UUID()).first)
            let repeated = try await append(.unchanged, for: second)
            #expect(repeated.jobCompleted)
            #expect(repeated.events.isEmpty)
            #expect(try await harness.count("SELECT count(*) FROM events") == 2)
            #expect(try await harness.count("SELECT count(*) FROM notifications WHERE apply_outcome = 'applied'") == 1)
            #expect(try await harness.count("SELECT count(*) FROM job_history WHERE state = 'completed'") == 2)

            // A claim lost to a rescue: the statement completes nothing and says so.
            _ = try await harness.client.withConnection { try await queue.enqueue(again, on: $0) }
            let lost = try #require(try await queue.claim(limit: 1, workerID: UUID()).first)
            #expect(try await queue.rescueAbandonedJobs(staleAfter: .seconds(30)) == 1)
            let stale = try await append(.applied, for: lost)
            #expect(!stale.jobCompleted)
            #expect(try await harness.count("SELECT count(*) FROM jobs WHERE state <> 'running'") == 1)
            #expect(try await harness.count("SELECT count(*) FROM job_history") == 2)
        }
    }

    @Test(
        "a transaction's applies in one statement: each notification's outcome and reason, each event at its own time and in order, a key twice appended once, each job answered in order; a lost claim among them answered false"
    )
    func appendForSeveralApplies() async throws {
        try await StorekeeperHarness.run(worker: false) { harness in
            let account = try #require(AccountID(UUID().uuidString.lowercased()))
            let uuids = [UUID(), UUID(), UUID()]
            try await harness.withHTTP { client in
                for uuid in uuids {
                    let event = SimulatedEvent.scenario(.subscribe, subscription: harness.subscription(account: UUID()), at: Date())
                    let answer = try await client.postNotification(try harness.signer.requestBody(for: event, notificationUUID: uuid))
                    #expect((try? answer.answer(IntakeAnswer.self))?.status == "accepted")
                }
            }
            let queue = harness.components.queue
            let log = EventLog(logger: TestDatabase.logger)
            let jobs = try await queue.claim(limit: 3, workerID: UUID()).sorted { $0.id < $1.id }
            try #require(jobs.count == 3)
            let started = Date(timeIntervalSince1970: 1_800_000_000)
            // The first apply's two events, the second's one (whose key the first has too), the third's none.
            let entries = [(0, "a"), (0, "b"), (1, "a"), (1, "c")].map { apply, key in
                (
                    draft: EventDraft(
                        type: .subscriptionStarted, key: "\(uuids[0]):\(key)", account: account, subscription: "1000", environment: .sandbox,
                        change: EventChange(productId: "monthly"), cause: EventCause(eventId: uuids[apply].uuidString, signedDate: Date())),
                    body: #"{"apply":\#(apply),"key":"\#(key)"}"#, createdAt: started.addingTimeInterval(Double(apply))
                )
            }
            let outcomes: [(NotificationStore.ApplyOutcome, String?)] = [(.applied, nil), (.unchanged, nil), (.rejectedContent, "too long")]
            func processed(_ jobs: [ClaimedJob]) -> [NotificationStore.Processed] {
                zip(zip(uuids, outcomes), jobs).map { pair, job in
                    .init(pair.0, outcome: pair.1.0, reason: pair.1.1, jobID: job.id, attempt: job.attempt)
                }
            }

            let (appended, completed) = try await harness.client.withTransaction(logger: TestDatabase.logger) { connection in
                try await log.append(entries, markingProcessed: processed(jobs), on: connection)
            }
            #expect(completed == [true, true, true])
            #expect(appended.map(\.key) == ["a", "b", "c"].map { "\(uuids[0]):\($0)" })
            for (event, apply) in zip(appended, [0, 0, 1]) {
                let stored = try await harness.client.withConnection { try await log.event(event.id, on: $0) }
                #expect(stored?.createdAt == started.addingTimeInterval(Double(apply)))
                #expect(stored?.body.hasPrefix(#"{"apply":\#(apply)"#) == true)
            }
            for (uuid, (outcome, reason)) in zip(uuids, outcomes) {
                #expect(
                    try await harness.count(
                        """
                        SELECT count(*) FROM notifications WHERE notification_uuid = '\(uuid)' AND applied_at IS NOT NULL
                            AND apply_outcome = '\(outcome.rawValue)' AND rejected_reason IS NOT DISTINCT FROM \(reason.map { "'\($0)'" } ?? "NULL")
                        """) == 1)
            }
            #expect(try await harness.count("SELECT count(*) FROM job_history WHERE state = 'completed'") == 3)
            #expect(try await harness.count("SELECT count(*) FROM jobs") == 0)

            // Requeued, the first one's claim lost (its attempt moved on), the three given in the reverse of the jobs'
            // order and with no reason: the answers follow the order given, and the stored reason stays.
            for uuid in uuids {
                let again = try NewJob(kind: NotificationInbox.applyJobKind, arguments: NotificationInbox.ApplyArguments(notificationUUID: uuid))
                _ = try await harness.client.withConnection { try await queue.enqueue(again, on: $0) }
            }
            let claimed = try await queue.claim(limit: 3, workerID: UUID()).sorted { $0.id < $1.id }
            try #require(claimed.count == 3)
            try await harness.client.withConnection { connection in
                _ = try await connection.query("UPDATE jobs SET attempt = attempt + 1 WHERE id = \(claimed[0].id)", logger: TestDatabase.logger)
            }
            let reversed = zip(uuids, claimed).reversed().map { uuid, job in
                NotificationStore.Processed(uuid, outcome: .unchanged, jobID: job.id, attempt: job.attempt)
            }
            let answers = try await harness.client.withTransaction(logger: TestDatabase.logger) { connection in
                try await log.append([], markingProcessed: reversed, on: connection).jobsCompleted
            }
            #expect(answers == [true, true, false])
            #expect(try await harness.count("SELECT count(*) FROM notifications WHERE rejected_reason = 'too long'") == 1)
        }
    }
}
