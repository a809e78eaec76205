import ArgumentParser
import Foundation
import Jobs
import Logging
import Persistence
import PostgresNIO
import StorekeeperRuntime
import Synchronization

struct QueueBenchmarkCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "queue",
        abstract: "Bulk-enqueue no-op jobs and drain them through the real worker; compare with pgbench; claim latency.",
        discussion: """
            Runs on a private throwaway cluster (default, durable settings) unless --database-url names a server, where \
            a fresh database is created and dropped. Figures: enqueue/s (bulk statements), drain jobs/s through \
            JobWorker (batch claims with FOR UPDATE SKIP LOCKED, batched fenced completion, history), the raw-SQL limit \
            (pgbench running one claim-and-archive statement per 100 jobs) and the ratio, and the median claim latency \
            with 1,000 and with --latency-pending jobs waiting.
            """
    )

    @Option(help: "No-op jobs to drain.") var jobs = 200_000
    @Option(help: "Worker instances (claim loops) in this process.") var workers = 2
    @Option(help: "Jobs in flight per worker.") var concurrency = 500
    @Option(help: "Pending jobs for the large claim-latency measurement (0 skips it).") var latencyPending = 1_000_000
    @Option(help: "postgres://… of a server to use instead of a private cluster.") var databaseURL: String?
    @Flag(help: "Print one JSON object on the last line.") var json = false

    func validate() throws {
        guard jobs > 0, workers > 0, concurrency > 0, latencyPending >= 0 else { throw ValidationError("counts must be positive") }
    }

    struct Noop: Codable {}

    /// Does nothing; counts runs so the drain knows when every job ran.
    struct NoopHandler: JobHandler {
        let kind = "noop"
        let runs: Counter
        func run(_ execution: JobExecution) async throws { runs.increment() }
    }

    final class Counter: Sendable {
        private let value = Mutex(0)
        func increment() { value.withLock { $0 += 1 } }
        var count: Int { value.withLock { $0 } }
    }

    func run() async throws {
        let logger = {
            var logger = Logger(label: "storekeeper.bench")
            logger.logLevel = .error
            return logger
        }()
        let (jobs, workers, concurrency, latencyPending) = (self.jobs, self.workers, self.concurrency, self.latencyPending)
        let report = try await BenchmarkDatabase.with(url: databaseURL, logger: logger) { url -> BenchmarkReport in
            return try await PostgresClient.withRunning(url.clientConfiguration(maximumConnections: 4 * workers + 8), logger: logger) {
                client -> BenchmarkReport in
                try await SchemaMigrator(client: client, directory: SchemaMigrator.defaultDirectory(), logger: logger).migrate()
                let queue = PostgresJobQueue(client: client, logger: logger)
                let clock = ContinuousClock()

                // Enqueue.
                let enqueueBegan = clock.now
                try await Self.enqueueNoops(jobs, queue: queue)
                let enqueueSeconds = (clock.now - enqueueBegan).seconds
                try await client.query("ANALYZE jobs", logger: logger)

                // Drain through the real worker machinery.
                let runs = Counter()
                let drainBegan = clock.now
                try await withThrowingTaskGroup(of: Void.self) { group in
                    for _ in 0..<workers {
                        let worker = JobWorker(
                            queue: queue, handlers: [NoopHandler(runs: runs)],
                            options: .init(concurrency: concurrency, pollInterval: .milliseconds(100)), logger: logger)
                        group.addTask { try await worker.run() }
                    }
                    while runs.count < jobs { try await Task.sleep(for: .milliseconds(5)) }
                    while try await Self.count(client, "SELECT count(*) FROM jobs", logger: logger) > 0 {
                        try await Task.sleep(for: .milliseconds(5))
                    }
                    group.cancelAll()
                }
                let drainSeconds = (clock.now - drainBegan).seconds

                // The same machine's raw-SQL limit: pgbench, one claim-and-archive statement per 100 jobs.
                try await Self.enqueueNoops(jobs, queue: queue)
                try await client.query("VACUUM ANALYZE jobs", logger: logger)
                let rawPerSecond = try Self.pgbench(jobs: jobs, url: url)
                try await client.query("TRUNCATE jobs", logger: logger)

                // Claim latency with few and with many pending jobs.
                let smallLatency = try await Self.claimLatency(pending: 1_000, queue: queue, logger: logger)
                let largeLatency =
                    latencyPending > 0
                    ? try await Self.claimLatency(pending: latencyPending, queue: queue, logger: logger) : nil

                let drainPerSecond = Double(jobs) / drainSeconds
                var report = BenchmarkReport()
                report.lines = [
                    "queue: \(jobs) no-op jobs, \(workers) workers × \(concurrency) in flight, PostgreSQL on \(url.host):\(url.port)",
                    "  enqueue (bulk, 5,000 per statement): \(Int(Double(jobs) / enqueueSeconds)) jobs/s",
                    "  drain through JobWorker:            \(Int(drainPerSecond)) jobs/s (\(String(format: "%.2f", drainSeconds)) s)",
                    "  raw SQL limit (pgbench, 4 clients): \(Int(rawPerSecond)) jobs/s — JobWorker reaches \(String(format: "%.0f", 100 * drainPerSecond / rawPerSecond)) %",
                    "  claim latency, median of 200 claims of 10: \(String(format: "%.2f", smallLatency)) ms with 1,000 pending"
                        + (largeLatency.map { String(format: ", %.2f ms with %d pending (×%.2f)", $0, latencyPending, $0 / smallLatency) } ?? ""),
                ]
                report.fields = [
                    ("benchmark", .text("queue")), ("jobs", .integer(jobs)), ("seconds", .number(drainSeconds)),
                    ("jobsPerSecond", .integer(Int(drainPerSecond))), ("enqueuePerSecond", .integer(Int(Double(jobs) / enqueueSeconds))),
                    ("rawSqlJobsPerSecond", .integer(Int(rawPerSecond))), ("ratio", .number(drainPerSecond / rawPerSecond)),
                    ("claimLatency1kMs", .number(smallLatency)),
                ]
                if let largeLatency {
                    report.fields += [
                        ("claimLatencyLargeMs", .number(largeLatency)), ("claimLatencyLargePending", .integer(latencyPending)),
                        ("claimLatencyRatio", .number(largeLatency / smallLatency)),
                    ]
                }
                return report
            }
        }
        report.print(json: json)
    }

    static func enqueueNoops(_ count: Int, queue: PostgresJobQueue) async throws {
        let batch = try NewJob(kind: "noop", arguments: Noop())
        var remaining = count
        while remaining > 0 {
            let size = min(5_000, remaining)
            _ = try await queue.client.withConnection { try await queue.enqueue(Array(repeating: batch, count: size), on: $0) }
            remaining -= size
        }
    }

    static func count(_ client: PostgresClient, _ sql: String, logger: Logger) async throws -> Int {
        for try await value in try await client.query(PostgresQuery(unsafeSQL: sql), logger: logger).decode(Int.self) { return value }
        return 0
    }

    /// jobs/s of pgbench running the claim-and-archive statement with 4 clients until the jobs are gone.
    static func pgbench(jobs: Int, url: DatabaseURL) throws -> Double {
        let script = FileManager.default.temporaryDirectory.appendingPathComponent("storekeeper-claim-\(UUID().uuidString).sql")
        try """
        WITH picked AS MATERIALIZED (
            SELECT id FROM jobs WHERE state = 'available' AND run_at <= now()
            ORDER BY priority, run_at, id LIMIT 100 FOR UPDATE SKIP LOCKED
        ), finished AS (
            DELETE FROM jobs USING picked WHERE jobs.id = picked.id
            RETURNING jobs.id, jobs.kind, jobs.attempt, jobs.args, jobs.errors, jobs.unique_key, jobs.created_at
        )
        INSERT INTO job_history (id, kind, state, attempt, args, errors, unique_key, created_at)
        SELECT id, kind, 'completed', attempt + 1, args, errors, unique_key, created_at FROM finished;
        """.write(to: script, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(at: script) }
        let transactionsPerClient = max(1, jobs / 100 / 4)
        let output = try BenchmarkDatabase.runTool(
            "pgbench", ["-n", "-c", "4", "-j", "2", "-t", String(transactionsPerClient), "-f", script.path], url: url)
        guard let line = output.split(separator: "\n").first(where: { $0.hasPrefix("tps = ") }),
            let tps = Double(line.dropFirst("tps = ".count).prefix { $0 != " " })
        else { throw CommandFailure("could not read pgbench's tps") }
        return tps * 100
    }

    /// Median milliseconds of a 10-job claim with `pending` runnable jobs (kept constant by re-enqueueing).
    static func claimLatency(pending: Int, queue: PostgresJobQueue, logger: Logger) async throws -> Double {
        try await queue.client.query("TRUNCATE jobs", logger: logger)
        try await enqueueNoops(pending, queue: queue)
        try await queue.client.query("VACUUM ANALYZE jobs", logger: logger)
        let clock = ContinuousClock()
        let worker = UUID()
        var samples: [Double] = []
        for _ in 0..<200 {
            let began = clock.now
            let claimed = try await queue.claim(limit: 10, workerID: worker)
            samples.append((clock.now - began).seconds * 1000)
            try await queue.complete(claimed)
            try await enqueueNoops(claimed.count, queue: queue)
        }
        return samples.sorted()[samples.count / 2]
    }
}
