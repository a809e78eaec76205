import Application
import Foundation
import Jobs
import LocalSigning
import StorekeeperRuntime
import TestSupport
import Testing

@testable import IntegrationSupport

@Suite("Applies sharing a transaction, on real PostgreSQL")
struct SharedApplyTests {
    @Test("a backlog of distinct subscriptions is applied four to a transaction; one that fails rolls its group back and the rest apply alone")
    func backlog() async throws {
        try await StorekeeperHarness.run(worker: false, environment: ["STOREKEEPER_APPLIES_PER_TRANSACTION": "4"]) { harness in
            let accounts = (0..<5).map { _ in UUID() }
            try await harness.withHTTP { client in
                for account in accounts {
                    let event = SimulatedEvent.scenario(.subscribe, subscription: harness.subscription(account: account), at: Date())
                    let answer = try await client.postNotification(try harness.signer.requestBody(for: event))
                    #expect(try answer.answer(IntakeAnswer.self).status == "accepted")
                }
            }
            // A sixth job, claimed with the fifth: its notification is not stored, so its apply discards it — a throw
            // that rolls back the transaction the two share.
            let queue = harness.components.queue
            let missing = NotificationInbox.ApplyArguments(notificationUUID: UUID())
            _ = try await queue.client.withConnection {
                try await queue.enqueue(try NewJob(kind: NotificationInbox.applyJobKind, arguments: missing), on: $0)
            }
            let worker = harness.components.worker(options: .init(concurrency: 8, pollInterval: .milliseconds(200)))
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask { try await worker.run() }
                defer { group.cancelAll() }
                try await eventually(timeout: .seconds(10), "every job to leave the queue") {
                    try await harness.count("SELECT count(*) FROM jobs") == 0
                }
            }
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
        }
    }
}
