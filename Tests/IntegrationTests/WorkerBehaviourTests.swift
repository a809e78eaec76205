import Foundation
import Jobs
import PostgresNIO
import StorekeeperRuntime
import Synchronization
import Testing

@Suite("Worker behaviour in process")
struct WorkerBehaviourTests {
    struct Empty: Codable {}

    final class Starts: Sendable {
        let dates = Mutex<[Date]>([])
    }

    struct SlowHandler: JobHandler {
        let kind = "slow"
        var timeout: Duration { .milliseconds(200) }
        func run(_ execution: JobExecution) async throws { try await Task.sleep(for: .seconds(30)) }
    }

    struct RecordingHandler: JobHandler {
        let kind = "record"
        let starts: Starts
        func run(_ execution: JobExecution) async throws { starts.dates.withLock { $0.append(Date()) } }
    }

    @Test("an attempt that outlives its handler's timeout is cancelled and counted as failed")
    func timeout() async throws {
        try await StorekeeperHarness.run(worker: false) { harness in
            let queue = harness.components.queue
            _ = try await queue.client.withConnection { try await queue.enqueue(try NewJob(kind: "slow", arguments: Empty(), maxAttempts: 1), on: $0) }
            let worker = JobWorker(queue: queue, handlers: [SlowHandler()], options: .init(pollInterval: .milliseconds(100)), logger: TestDatabase.logger)
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask { try await worker.run() }
                defer { group.cancelAll() }
                try await eventually(timeout: .seconds(10), "the attempt to time out") {
                    try await queue.jobs(state: "failed", kind: "slow", limit: 1).first?.lastError?.contains("timeout") == true
                }
            }
        }
    }

    @Test("a delayed job starts when due, not at the next poll (poll interval 10 s)")
    func delayedJobTimer() async throws {
        try await StorekeeperHarness.run(worker: false) { harness in
            let queue = harness.components.queue
            let starts = Starts()
            let worker = JobWorker(queue: queue, handlers: [RecordingHandler(starts: starts)], options: .init(pollInterval: .seconds(10)), logger: TestDatabase.logger)
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask { try await worker.run() }
                defer { group.cancelAll() }
                // The worker listens before the enqueue, so its NOTIFY reaches it (a wake-up before the idle wait is kept).
                try await harness.waitUntilListening()
                let runAt = Date().addingTimeInterval(1.5)
                _ = try await queue.client.withConnection { try await queue.enqueue(try NewJob(kind: "record", arguments: Empty(), runAt: runAt), on: $0) }
                try await eventually(timeout: .seconds(6), "the delayed job to start well before the next poll") {
                    starts.dates.withLock { !$0.isEmpty }
                }
                let started = try #require(starts.dates.withLock { $0.first })
                #expect(started >= runAt.addingTimeInterval(-0.01), "started before it was due")
            }
        }
    }

    @Test("history older than the retention is pruned")
    func retention() async throws {
        try await StorekeeperHarness.run(worker: false) { harness in
            let queue = harness.components.queue
            _ = try await queue.client.withConnection { try await queue.enqueue([try NewJob(kind: "x", arguments: Empty()), try NewJob(kind: "x", arguments: Empty())], on: $0) }
            try await queue.complete(try await queue.claim(limit: 2, workerID: UUID()))
            try await harness.client.query("UPDATE job_history SET finished_at = now() - interval '8 days' WHERE id = (SELECT min(id) FROM job_history)", logger: TestDatabase.logger)
            #expect(try await queue.pruneHistory(olderThan: .seconds(7 * 86_400)) == 1)
            #expect(try await harness.count("SELECT count(*) FROM job_history") == 1)
        }
    }
}
