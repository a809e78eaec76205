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

/// An apply stores its events in the statement that records its outcome and completes its job
/// (`EventLog.append(_:at:markingProcessed:on:)`): each of the three writes must happen — or, for a lost claim, none.
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
            let entries = drafts.map { (draft: $0, body: #"{"key":"\#($0.key)"}"#) }
            func append(_ outcome: NotificationStore.ApplyOutcome, for job: ClaimedJob) async throws -> (
                events: [EventLog.Appended], jobCompleted: Bool
            ) {
                try await harness.client.withTransaction(logger: TestDatabase.logger) { connection in
                    try await log.append(
                        entries, at: Date(), markingProcessed: .init(uuid, outcome: outcome, jobID: job.id, attempt: job.attempt), on: connection)
                }
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
}
