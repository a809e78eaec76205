// A worker process for the queue's multi-process tests: the real JobWorker in a real ServiceGroup (SIGTERM =
// graceful shutdown), with one `probe` job kind that records every run in `probe_runs` (created by the tests).
import Foundation
import Jobs
import Logging
import PostgresNIO
import ServiceLifecycle
import StorekeeperRuntime
import UnixSignals

struct ProbeArguments: Codable {
    var key: String
    /// How long the first attempt takes; later attempts take `retryMilliseconds`.
    var milliseconds: Int
    var retryMilliseconds: Int?
    /// Attempts before this number fail.
    var failUntilAttempt: Int?
}

struct ProbeHandler: JobHandler {
    let kind = "probe"
    let client: PostgresClient
    let workerName: String
    let logger: Logger

    func run(_ execution: JobExecution) async throws {
        let job = execution.job
        let arguments = try job.decodeArguments(as: ProbeArguments.self)
        // The start is committed on its own, so a run that never completes is still visible.
        try await client.query(
            """
            INSERT INTO probe_runs (job_id, attempt, key, worker, started_at)
            VALUES (\(job.id), \(job.attempt), \(arguments.key), \(workerName), clock_timestamp())
            """,
            logger: logger)
        let duration = job.attempt == 1 ? arguments.milliseconds : (arguments.retryMilliseconds ?? arguments.milliseconds)
        try await Task.sleep(for: .milliseconds(duration))
        if let failUntil = arguments.failUntilAttempt, job.attempt < failUntil {
            throw ProbeFailure(attempt: job.attempt)
        }
        try await client.withTransaction(logger: logger) { connection in
            try await connection.query(
                """
                UPDATE probe_runs SET finished_at = clock_timestamp()
                WHERE job_id = \(job.id) AND attempt = \(job.attempt)
                """,
                logger: logger)
            try await execution.complete(on: connection)
        }
    }
}

struct ProbeFailure: Error, CustomStringConvertible {
    let attempt: Int
    var description: String { "probe failure on attempt \(attempt)" }
}

let environment = ProcessInfo.processInfo.environment
guard let urlText = environment["DATABASE_URL"], let url = try? DatabaseURL(parsing: urlText) else {
    FileHandle.standardError.write(Data("storekeeper-probe-worker: DATABASE_URL is required\n".utf8))
    exit(1)
}
var logger = Logger(label: "probe-worker")
// Info: the shutdown test waits for the worker's "worker stopping" line.
logger.logLevel = .info
let name = environment["PROBE_WORKER_NAME"] ?? "probe-\(getpid())"
let client = PostgresClient(configuration: url.clientConfiguration(), backgroundLogger: logger)
var options = JobWorker.Options(
    concurrency: Int(environment["PROBE_CONCURRENCY"] ?? "") ?? 8, pollInterval: .milliseconds(200), retryPolicy: RetryPolicy(base: 0.05, cap: 0.2))
if let grace = Int(environment["PROBE_SHUTDOWN_GRACE_MS"] ?? "") { options.shutdownGrace = .milliseconds(grace) }
let worker = JobWorker(
    queue: PostgresJobQueue(client: client, logger: logger), handlers: [ProbeHandler(client: client, workerName: name, logger: logger)],
    options: options, logger: logger)
let group = ServiceGroup(
    configuration: .init(
        services: [.init(service: client), .init(service: worker)], gracefulShutdownSignals: [.sigterm, .sigint],
        cancellationSignals: [], logger: logger))
FileHandle.standardOutput.write(Data("ready\n".utf8))
try await group.run()
