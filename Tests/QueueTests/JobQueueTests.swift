import Foundation
import Jobs
import PostgresNIO
import StorekeeperRuntime
import Testing

@testable import IntegrationSupport

@Suite("Job queue on real PostgreSQL")
struct JobQueueTests {
    struct Arguments: Codable, Equatable { var value: Int }

    private func withQueue(_ body: (PostgresJobQueue) async throws -> Void) async throws {
        try await StorekeeperHarness.run(worker: false) { harness in try await body(harness.components.queue) }
    }

    private func enqueue(_ queue: PostgresJobQueue, _ job: NewJob) async throws -> EnqueueResult {
        try await queue.client.withConnection { try await queue.enqueue(job, on: $0) }
    }

    @Test("unique keys: a second live job with the same key is reported as a duplicate")
    func uniqueness() async throws {
        try await withQueue { queue in
            let job = try NewJob(kind: "test", arguments: Arguments(value: 1), uniqueKey: "only-one")
            guard case .enqueued = try await enqueue(queue, job) else {
                Issue.record("first enqueue failed")
                return
            }
            #expect(try await enqueue(queue, job) == .duplicate)
        }
    }

    @Test("completion is fenced by the attempt: a rescued job's old claim cannot complete it")
    func fencedCompletion() async throws {
        try await withQueue { queue in
            _ = try await enqueue(queue, try NewJob(kind: "test", arguments: Arguments(value: 1)))
            let worker = UUID()
            let first = try #require(try await queue.claim(limit: 10, workerID: worker).first)
            #expect(first.attempt == 1)
            #expect(try first.decodeArguments(as: Arguments.self) == Arguments(value: 1))
            // The worker is dead as far as anyone knows: rescue makes the job runnable; another claim takes it.
            #expect(try await queue.rescueAbandonedJobs(staleAfter: .seconds(30)) == 1)
            let second = try #require(try await queue.claim(limit: 10, workerID: UUID()).first)
            #expect(second.attempt == 2)
            let error = await #expect(throws: JobQueueError.self) {
                try await queue.client.withConnection { try await queue.complete(first, on: $0) }
            }
            #expect(error?.code == .lostClaim)
            #expect(try await queue.fail(first, error: "late", retryAt: Date()) == nil)
            try await queue.client.withConnection { try await queue.complete(second, on: $0) }
        }
    }

    @Test("a failed attempt is retried later; out of attempts it becomes failed with every error kept")
    func retries() async throws {
        try await withQueue { queue in
            _ = try await enqueue(queue, try NewJob(kind: "test", arguments: Arguments(value: 1), maxAttempts: 2))
            let worker = UUID()
            let first = try #require(try await queue.claim(limit: 1, workerID: worker).first)
            #expect(try await queue.fail(first, error: "boom 1", retryAt: Date().addingTimeInterval(3600)) == .available)
            #expect(try await queue.claim(limit: 1, workerID: worker).isEmpty, "not before its retry time")
            try await queue.client.query("UPDATE jobs SET run_at = now()", logger: TestDatabase.logger)
            let second = try #require(try await queue.claim(limit: 1, workerID: worker).first)
            #expect(try await queue.fail(second, error: "boom 2", retryAt: Date()) == .failed)
            let rows = try await queue.client.query("SELECT state, jsonb_array_length(errors) FROM jobs", logger: TestDatabase.logger)
            for try await (state, errors) in rows.decode((String, Int).self) {
                #expect(state == "failed")
                #expect(errors == 2)
            }
        }
    }

    @Test("jobs sharing a concurrency key run one at a time, in order")
    func perKeySerialization() async throws {
        try await withQueue { queue in
            for value in 1...3 {
                _ = try await enqueue(queue, try NewJob(kind: "test", arguments: Arguments(value: value), concurrencyKey: "subscription:1"))
            }
            _ = try await enqueue(queue, try NewJob(kind: "test", arguments: Arguments(value: 9), concurrencyKey: "subscription:2"))
            var seen: [Int] = []
            while seen.count < 4 {
                let batch = try await queue.claim(limit: 10, workerID: UUID())
                let keyOne = try batch.map { try $0.decodeArguments(as: Arguments.self).value }.filter { $0 != 9 }
                #expect(keyOne.count <= 1, "two jobs of one key claimed together")
                for job in batch {
                    seen.append(try job.decodeArguments(as: Arguments.self).value)
                    try await queue.client.withConnection { try await queue.complete(job, on: $0) }
                }
            }
            #expect(seen.filter { $0 != 9 } == [1, 2, 3])
        }
    }
}
