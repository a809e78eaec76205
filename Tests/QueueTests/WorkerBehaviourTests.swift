import Foundation
import Jobs
import PostgresNIO
import StorekeeperRuntime
import Synchronization
import Testing

@testable import IntegrationSupport

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
            _ = try await queue.client.withConnection {
                try await queue.enqueue(try NewJob(kind: "slow", arguments: Empty(), maxAttempts: 1), on: $0)
            }
            let worker = JobWorker(
                queue: queue, handlers: [SlowHandler()], options: .init(pollInterval: .milliseconds(100)), logger: TestDatabase.logger)
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask { try await worker.run() }
                defer { group.cancelAll() }
                try await eventually(timeout: .seconds(10), "the attempt to time out") {
                    try await queue.jobs(state: .failed, kind: "slow", limit: 1).first?.lastError?.contains("timeout") == true
                }
            }
        }
    }

    @Test("a delayed job starts when due, not at the next poll (poll interval 10 s)")
    func delayedJobTimer() async throws {
        try await StorekeeperHarness.run(worker: false) { harness in
            let queue = harness.components.queue
            let starts = Starts()
            let worker = JobWorker(
                queue: queue, handlers: [RecordingHandler(starts: starts)], options: .init(pollInterval: .seconds(10)), logger: TestDatabase.logger)
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask { try await worker.run() }
                defer { group.cancelAll() }
                // The worker listens before the enqueue, so its NOTIFY reaches it (a wake-up before the idle wait is kept).
                try await harness.waitUntilListening()
                let runAt = Date().addingTimeInterval(1.5)
                _ = try await queue.client.withConnection {
                    try await queue.enqueue(try NewJob(kind: "record", arguments: Empty(), runAt: runAt), on: $0)
                }
                try await eventually(timeout: .seconds(6), "the delayed job to start well before the next poll") {
                    starts.dates.withLock { !$0.isEmpty }
                }
                let started = try #require(starts.dates.withLock { $0.first })
                #expect(started >= runAt.addingTimeInterval(-0.01), "started before it was due")
            }
        }
    }

    /// Holds each job's attempt until the test lets it finish.
    final class Gate: Sendable {
        private let state = Mutex<(started: [Int64], released: Set<Int64>, waiting: [Int64: CheckedContinuation<Void, Never>])>(([], [], [:]))

        var started: [Int64] { state.withLock { $0.started } }

        func pass(_ job: Int64) async {
            await withCheckedContinuation { continuation in
                let open = state.withLock { state -> Bool in
                    state.started.append(job)
                    if state.released.contains(job) { return true }
                    state.waiting[job] = continuation
                    return false
                }
                if open { continuation.resume() }
            }
        }

        func release(_ job: Int64) {
            state.withLock { state in
                state.released.insert(job)
                return state.waiting.removeValue(forKey: job)
            }?.resume()
        }
    }

    struct GatedHandler: JobHandler {
        let kind = "gated"
        let gate: Gate
        func run(_ execution: JobExecution) async throws { await gate.pass(execution.job.id) }
    }

    @Test("with a backlog, a worker claims again only once claimBatch slots are free: two finished jobs, one claim")
    func claimBatches() async throws {
        try await StorekeeperHarness.run(worker: false) { harness in
            let queue = harness.components.queue
            _ = try await queue.client.withConnection {
                try await queue.enqueue(try (0..<12).map { _ in try NewJob(kind: "gated", arguments: Empty()) }, on: $0)
            }
            let gate = Gate()
            var options = JobWorker.Options(concurrency: 4, pollInterval: .seconds(30))
            options.claimBatch = 2
            let worker = JobWorker(queue: queue, handlers: [GatedHandler(gate: gate)], options: options, logger: TestDatabase.logger)
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask { try await worker.run() }
                defer { group.cancelAll() }
                try await eventually(timeout: .seconds(10), "the first four jobs to start") { gate.started.count == 4 }
                let first = gate.started
                // One finished job: its completion is written, and still nothing more has started.
                gate.release(first[0])
                try await eventually(timeout: .seconds(10), "the first job's completion") {
                    try await harness.count("SELECT count(*) FROM job_history WHERE id = \(first[0])") == 1
                }
                #expect(gate.started.count == 4, "a single free slot was claimed while the queue was backlogged")
                gate.release(first[1])
                try await eventually(timeout: .seconds(10), "two more jobs to start") { gate.started.count == 6 }
                let claimed = Array(gate.started[4...])
                let claims = try await harness.count(
                    "SELECT count(DISTINCT attempted_at) FROM jobs WHERE id IN (\(claimed[0]), \(claimed[1]))")
                #expect(claims == 1, "the two free slots were filled by one claim")
                for job in gate.started { gate.release(job) }
                try await eventually(timeout: .seconds(10), "every job to finish") {
                    for job in gate.started { gate.release(job) }
                    return try await harness.count("SELECT count(*) FROM job_history") == 12
                }
            }
        }
    }

    @Test("history older than the retention is pruned")
    func retention() async throws {
        try await StorekeeperHarness.run(worker: false) { harness in
            let queue = harness.components.queue
            _ = try await queue.client.withConnection {
                try await queue.enqueue([try NewJob(kind: "x", arguments: Empty()), try NewJob(kind: "x", arguments: Empty())], on: $0)
            }
            try await queue.complete(try await queue.claim(limit: 2, workerID: UUID()))
            try await harness.client.query(
                "UPDATE job_history SET finished_at = now() - interval '8 days' WHERE id = (SELECT min(id) FROM job_history)",
                logger: TestDatabase.logger)
            #expect(try await queue.pruneHistory(olderThan: .seconds(7 * 86_400)) == 1)
            #expect(try await harness.count("SELECT count(*) FROM job_history") == 1)
        }
    }
}
