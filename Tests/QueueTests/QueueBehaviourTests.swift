import Foundation
import HTTPTypes
import Jobs
import NIOCore
import PostgresNIO
import StorekeeperRuntime
import Testing

@testable import IntegrationSupport

@Suite("Queue behaviour on real PostgreSQL")
struct QueueBehaviourTests {
    struct Arguments: Codable { var slot: Double }

    @Test("concurrent enqueues of one unique key: exactly one job")
    func concurrentUniqueEnqueue() async throws {
        try await StorekeeperHarness.run(worker: false) { harness in
            let queue = harness.components.queue
            let results = try await withThrowingTaskGroup(of: EnqueueResult.self) { group in
                for _ in 0..<20 {
                    group.addTask {
                        try await queue.client.withConnection {
                            try await queue.enqueue(try NewJob(kind: "x", arguments: Arguments(slot: 0), uniqueKey: "same"), on: $0)
                        }
                    }
                }
                return try await group.reduce(into: [EnqueueResult]()) { $0.append($1) }
            }
            #expect(results.filter { $0 != .duplicate }.count == 1)
            #expect(try await harness.count("SELECT count(*) FROM jobs") == 1)
        }
    }

    @Test("periodic slots: missed slots caught up once, in order, by concurrent workers; no backfill for a new schedule")
    func periodicCatchUp() async throws {
        try await StorekeeperHarness.run(worker: false) { harness in
            let queue = harness.components.queue
            let schedule = PeriodicSchedule(name: "tick", kind: "tick", every: 60) { Arguments(slot: $0.timeIntervalSince1970) }
            let now = Date()
            #expect(try await queue.enqueueDueSlots(of: schedule, now: now) == 1, "a new schedule enqueues its current slot only")
            // Pretend no worker ran for ten minutes.
            try await harness.client.query(
                "UPDATE job_schedules SET last_slot = last_slot - interval '10 minutes'", logger: TestDatabase.logger)
            let inserted = try await withThrowingTaskGroup(of: Int.self) { group in
                for _ in 0..<5 { group.addTask { try await queue.enqueueDueSlots(of: schedule, now: now) } }
                return try await group.reduce(0, +)
            }
            // Ten slots are due again; the current one is already enqueued (its unique key makes it a no-op).
            #expect(inserted == 9)
            #expect(try await harness.count("SELECT count(*) FROM jobs WHERE kind = 'tick'") == 10)
            #expect(try await harness.count("SELECT count(DISTINCT run_at) FROM jobs WHERE kind = 'tick'") == 10)
            #expect(try await queue.enqueueDueSlots(of: schedule, now: now) == 0)
        }
    }

    @Test("one maintainer at a time: the lease")
    func lease() async throws {
        try await StorekeeperHarness.run(worker: false) { harness in
            let queue = harness.components.queue
            let first = UUID()
            let second = UUID()
            #expect(try await queue.acquireLease("maintenance", holder: first, for: .seconds(30)))
            #expect(try await !queue.acquireLease("maintenance", holder: second, for: .seconds(30)))
            #expect(try await queue.acquireLease("maintenance", holder: first, for: .seconds(30)), "the holder renews")
            try await harness.client.query("UPDATE job_leases SET expires_at = now() - interval '1 second'", logger: TestDatabase.logger)
            #expect(try await queue.acquireLease("maintenance", holder: second, for: .seconds(30)), "an expired lease is taken over")
        }
    }

    @Test("snooze keeps the attempt; discard ends in history; cancel only touches waiting jobs")
    func outcomes() async throws {
        try await StorekeeperHarness.run(worker: false) { harness in
            let queue = harness.components.queue
            try await queue.client.withConnection { connection in
                for index in 0..<3 { _ = try await queue.enqueue(try NewJob(kind: "x", arguments: Arguments(slot: Double(index))), on: connection) }
            }
            let claimed = try await queue.claim(limit: 2, workerID: UUID())
            #expect(claimed.count == 2)
            #expect(try await queue.snooze(claimed[0], until: Date().addingTimeInterval(3600)))
            #expect(try await queue.discard(claimed[1], reason: "never"))
            let snoozed = try #require(try await queue.job(id: claimed[0].id))
            #expect(snoozed.state == .available)
            #expect(snoozed.attempt == 0)
            #expect(try await queue.job(id: claimed[1].id)?.state == .discarded)
            let waiting = try await queue.jobs(state: .available, kind: nil, limit: 10).map(\.id)
            #expect(try await queue.cancel(ids: waiting + [claimed[1].id]) == waiting.sorted())
            #expect(try await queue.requeue(state: .cancelled, kind: nil, since: nil, dryRun: false).count == 2)
            #expect(try await queue.nextRunAt() != nil)
        }
    }

    @Test("the admin API lists, shows, requeues and cancels; it wants an admin key")
    func adminAPI() async throws {
        try await StorekeeperHarness.run(worker: false, environment: ["STOREKEEPER_ADMIN_KEYS": "admin-key"]) { harness in
            let queue = harness.components.queue
            _ = try await queue.client.withConnection {
                try await queue.enqueue(try NewJob(kind: "x", arguments: Arguments(slot: 1), maxAttempts: 1), on: $0)
            }
            let job = try #require(try await queue.claim(limit: 1, workerID: UUID()).first)
            _ = try await queue.fail(job, error: "boom", retryAt: Date())
            try await harness.withHTTP { client in
                let headers: HTTPFields = [.authorization: "Bearer admin-key"]
                #expect(try await client.execute(uri: "/admin/stats", method: .get).status == .unauthorized)
                #expect(
                    try await client.execute(uri: "/admin/stats", method: .get, headers: [.authorization: "Bearer \(StorekeeperHarness.apiKey)"])
                        .status == .unauthorized)
                let stats = try await client.execute(uri: "/admin/stats", method: .get, headers: headers)
                #expect(stats.status == .ok)
                let list = try await client.execute(uri: "/admin/jobs?state=failed", method: .get, headers: headers).answer(JobListAnswer.self)
                #expect(list.jobs.count == 1)
                #expect(try await client.execute(uri: "/admin/jobs?state=bogus", method: .get, headers: headers).status == .badRequest)
                let shown = try await client.execute(uri: "/admin/jobs/\(job.id)", method: .get, headers: headers).answer(JobAnswer.self)
                #expect(shown.errors.first?.error == "boom")
                var jsonHeaders = headers
                jsonHeaders[.contentType] = "application/json"
                let requeued = try await client.execute(
                    uri: "/admin/jobs/requeue", method: .post, headers: jsonHeaders,
                    body: ByteBuffer(string: #"{"state": "failed", "kind": "x"}"#)
                ).answer(RequeuedAnswer.self)
                #expect(requeued.count == 1)
                #expect(try await client.execute(uri: "/admin/jobs/\(job.id)/cancel", method: .post, headers: headers).status == .ok)
                #expect(try await client.execute(uri: "/admin/jobs/\(job.id)/cancel", method: .post, headers: headers).status == .conflict)
                #expect(try await client.execute(uri: "/admin/jobs/999999", method: .get, headers: headers).status == .notFound)
            }
        }
    }
}
