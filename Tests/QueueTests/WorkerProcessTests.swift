import Foundation
import Jobs
import Logging
import Persistence
import PostgresNIO
import StorekeeperRuntime
import Testing

@testable import IntegrationSupport

/// The queue with real worker processes (`storekeeper-probe-worker`) on real PostgreSQL.
@Suite("Worker processes")
struct WorkerProcessTests {
    struct Probe: Codable {
        var key: String
        var milliseconds: Int
        var retryMilliseconds: Int?
        var failUntilAttempt: Int?
    }

    /// A migrated database with the probe table, a running client and queue.
    static func withProbeDatabase(_ body: @escaping @Sendable (DatabaseURL, PostgresJobQueue) async throws -> Void) async throws {
        try await TestDatabase.withMigratedDatabase { url in
            try await PostgresClient.withRunning(url.clientConfiguration(), logger: TestDatabase.logger) { client in
                try await client.query(
                    """
                    CREATE TABLE probe_runs (job_id bigint, attempt int, key text, worker text,
                                             started_at timestamptz, finished_at timestamptz)
                    """,
                    logger: TestDatabase.logger)
                try await body(url, PostgresJobQueue(client: client, logger: TestDatabase.logger))
            }
        }
    }

    static func count(_ queue: PostgresJobQueue, _ sql: String) async throws -> Int {
        for try await value in try await queue.client.query(PostgresQuery(unsafeSQL: sql), logger: TestDatabase.logger).decode(Int.self) {
            return value
        }
        return 0
    }

    static func startWorkers(_ count: Int, url: DatabaseURL, environment: [String: String] = [:]) throws -> [TestProcess] {
        try (0..<count).map { index in
            try TestProcess(
                "storekeeper-probe-worker",
                environment: ["DATABASE_URL": url.urlString, "PROBE_WORKER_NAME": "worker-\(index)"].merging(environment) { $1 })
        }
    }

    @Test("three worker processes: every job runs exactly once; jobs of one key never overlap and run in order")
    func exactlyOnceAndSerialized() async throws {
        try await Self.withProbeDatabase { url, queue in
            var jobs: [NewJob] = []
            for index in 0..<300 {
                let key = "subscription:\(index % 15)"
                jobs.append(try NewJob(kind: "probe", arguments: Probe(key: key, milliseconds: 3), concurrencyKey: key))
            }
            let inserted = try await queue.client.withConnection { connection in try await queue.enqueue(jobs, on: connection) }
            #expect(inserted == 300)
            let workers = try Self.startWorkers(3, url: url)
            try await eventually(timeout: .seconds(90), "300 jobs to complete") {
                try await Self.count(queue, "SELECT count(*) FROM job_history WHERE state = 'completed'") == 300
            }
            for worker in workers { worker.signal(SIGTERM) }
            #expect(try await Self.count(queue, "SELECT count(*) FROM probe_runs") == 300)
            #expect(try await Self.count(queue, "SELECT count(DISTINCT job_id) FROM probe_runs") == 300)
            #expect(try await Self.count(queue, "SELECT count(*) FROM job_history WHERE attempt <> 1") == 0)
            #expect(try await Self.count(queue, "SELECT count(DISTINCT worker) FROM probe_runs") > 1)
            // No two runs of one key overlap in time…
            #expect(
                try await Self.count(
                    queue,
                    """
                    SELECT count(*) FROM probe_runs a JOIN probe_runs b
                      ON a.key = b.key AND a.job_id < b.job_id
                     AND a.started_at < b.finished_at AND b.started_at < a.finished_at
                    """) == 0)
            // …and within a key they ran in enqueue order.
            #expect(
                try await Self.count(
                    queue,
                    """
                    SELECT count(*) FROM probe_runs a JOIN probe_runs b
                      ON a.key = b.key AND a.job_id < b.job_id AND a.started_at > b.started_at
                    """) == 0)
            for worker in workers { #expect(await worker.waitForExit() == 0) }
        }
    }

    @Test("kill -9 of the worker running a job: another worker runs it again within the lease")
    func killedWorkerIsRescued() async throws {
        try await Self.withProbeDatabase { url, queue in
            let workers = try Self.startWorkers(2, url: url)
            let job = try NewJob(kind: "probe", arguments: Probe(key: "k", milliseconds: 600_000, retryMilliseconds: 10))
            _ = try await queue.client.withConnection { try await queue.enqueue(job, on: $0) }
            var runningOn = ""
            try await eventually(timeout: .seconds(20), "the job to start") {
                let rows = try await queue.client.query("SELECT worker FROM probe_runs WHERE attempt = 1", logger: TestDatabase.logger)
                for try await worker in rows.decode(String.self) { runningOn = worker }
                return !runningOn.isEmpty
            }
            let index = try #require(Int(runningOn.split(separator: "-").last ?? ""))
            try #require(workers.indices.contains(index))
            let victim = workers[index]
            victim.signal(SIGKILL)
            let killedAt = ContinuousClock.now
            try await eventually(timeout: .seconds(60), "the job to complete on the other worker") {
                try await Self.count(queue, "SELECT count(*) FROM job_history WHERE state = 'completed'") == 1
            }
            let rescueSeconds = ContinuousClock.now - killedAt
            #expect(rescueSeconds < .seconds(45), "rescued after \(rescueSeconds)")
            #expect(try await Self.count(queue, "SELECT count(*) FROM probe_runs WHERE attempt = 2 AND worker <> '\(runningOn)'") == 1)
            #expect(try await Self.count(queue, "SELECT count(*) FROM job_history WHERE attempt = 2") == 1)
            for worker in workers where worker.isRunning { worker.signal(SIGTERM) }
        }
    }

    @Test("SIGTERM: the worker stops claiming, finishes the job in flight, and exits 0")
    func gracefulShutdown() async throws {
        try await Self.withProbeDatabase { url, queue in
            let workers = try Self.startWorkers(1, url: url)
            _ = try await queue.client.withConnection {
                try await queue.enqueue(try NewJob(kind: "probe", arguments: Probe(key: "k", milliseconds: 1_500)), on: $0)
            }
            try await eventually(timeout: .seconds(20), "the job to start") {
                try await Self.count(queue, "SELECT count(*) FROM probe_runs") == 1
            }
            workers[0].signal(SIGTERM)
            // Enqueued once the worker has heard the signal (not merely after it was sent: under load the worker can
            // claim first): must not be claimed by the stopping worker.
            try await eventually(timeout: .seconds(20), "the worker to hear SIGTERM") { workers[0].text.contains("worker stopping") }
            _ = try await queue.client.withConnection {
                try await queue.enqueue(try NewJob(kind: "probe", arguments: Probe(key: "late", milliseconds: 1)), on: $0)
            }
            #expect(await workers[0].waitForExit(timeout: .seconds(30)) == 0)
            #expect(try await Self.count(queue, "SELECT count(*) FROM job_history WHERE state = 'completed'") == 1)
            #expect(try await Self.count(queue, "SELECT count(*) FROM jobs WHERE state = 'available'") == 1)
            #expect(try await Self.count(queue, "SELECT count(*) FROM job_workers") == 0)
        }
    }

    @Test(
        "SIGTERM with a job that outlasts the grace: the worker cancels it, releases it (runnable at once, the attempt recorded), deregisters and exits 0 — no job left running under a worker that is gone (helper-143)"
    )
    func shutdownGraceReleases() async throws {
        try await Self.withProbeDatabase { url, queue in
            let workers = try Self.startWorkers(1, url: url, environment: ["PROBE_SHUTDOWN_GRACE_MS": "1000"])
            _ = try await queue.client.withConnection {
                try await queue.enqueue(try NewJob(kind: "probe", arguments: Probe(key: "long", milliseconds: 120_000)), on: $0)
            }
            try await eventually(timeout: .seconds(20), "the job to start") {
                try await Self.count(queue, "SELECT count(*) FROM probe_runs") == 1
            }
            workers[0].signal(SIGTERM)
            #expect(await workers[0].waitForExit(timeout: .seconds(20)) == 0)
            #expect(try await Self.count(queue, "SELECT count(*) FROM jobs WHERE state = 'running'") == 0)
            #expect(
                try await Self.count(
                    queue,
                    "SELECT count(*) FROM jobs WHERE state = 'available' AND locked_by IS NULL AND errors::text LIKE '%released at shutdown%'") == 1)
            #expect(try await Self.count(queue, "SELECT count(*) FROM job_workers") == 0)
            #expect(workers[0].text.contains("released them"))
        }
    }

    @Test("retries with backoff, then failed with every error; requeue grants a fresh budget and it succeeds")
    func retryFailRequeue() async throws {
        try await Self.withProbeDatabase { url, queue in
            let workers = try Self.startWorkers(1, url: url)
            let recovering = try NewJob(kind: "probe", arguments: Probe(key: "a", milliseconds: 1, failUntilAttempt: 3), maxAttempts: 5)
            let hopeless = try NewJob(kind: "probe", arguments: Probe(key: "b", milliseconds: 1, failUntilAttempt: 4), maxAttempts: 2)
            try await queue.client.withConnection { _ = try await queue.enqueue([recovering, hopeless], on: $0) }
            try await eventually(timeout: .seconds(30), "one completion and one failure") {
                let completed = try await Self.count(queue, "SELECT count(*) FROM job_history WHERE state = 'completed'")
                let failed = try await Self.count(queue, "SELECT count(*) FROM jobs WHERE state = 'failed'")
                return completed == 1 && failed == 1
            }
            let failed = try #require(try await queue.jobs(state: .failed, kind: nil, limit: 10).first)
            #expect(failed.attempt == 2)
            #expect(failed.errors.count == 2)
            #expect(failed.lastError?.contains("probe failure on attempt 2") == true)
            #expect(try await queue.requeue(state: .failed, kind: "probe", since: nil, dryRun: true) == [failed.id])
            #expect(try await queue.requeue(ids: [failed.id]) == [failed.id])
            try await eventually(timeout: .seconds(30), "the requeued job to complete") {
                try await Self.count(queue, "SELECT count(*) FROM job_history WHERE state = 'completed'") == 2
            }
            // The attempt counter kept growing (it fences completions): attempts 3 and 4 ran after the requeue.
            #expect(try await Self.count(queue, "SELECT max(attempt) FROM probe_runs WHERE key = 'b'") == 4)
            workers[0].signal(SIGTERM)
            _ = await workers[0].waitForExit()
        }
    }
}
