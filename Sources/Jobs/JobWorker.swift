import Foundation
import Logging
import PostgresNIO
import ServiceLifecycle
import StatementFencing
import Synchronization

/// A worker process's job runner, as a `Service`: claims batches sized to its free slots, runs them with their
/// ``JobHandler``s, batches completions, wakes on LISTEN/NOTIFY (or when the next delayed job is due) with polling as
/// the fallback, heartbeats, and — while it holds the maintenance lease — rescues jobs of dead workers and prunes
/// history. Every worker enqueues due periodic slots; the schedule table makes that exactly-once.
///
/// On graceful shutdown it stops claiming, lets in-flight jobs finish (the service group's grace period bounds
/// this), flushes completions and deregisters.
public final class JobWorker: Service, Sendable {
    /// Tuning knobs; the defaults suit a small deployment.
    public struct Options: Sendable {
        public var concurrency: Int
        /// While claims come back full (a backlog), the worker claims again only once this many slots are free: one
        /// round trip then starts several jobs instead of one per finished job. Below a backlog every free slot is
        /// claimed at once. A quarter of ``concurrency`` unless set.
        public var claimBatch: Int?
        public var pollInterval: Duration
        public var heartbeatInterval: Duration
        /// A worker whose heartbeat is older than this is dead; its running jobs are rescued.
        public var rescueAfter: Duration
        public var retryPolicy: RetryPolicy
        /// Finished jobs are kept in `job_history` this long.
        public var historyRetention: Duration
        public var schedules: [PeriodicSchedule]
        /// A job the database says this worker runs but the worker does not know of (a lost claim answer, an outcome
        /// not written while the database was away) is released after this long.
        public var orphanGrace: Duration = .seconds(30)
        /// How long a graceful stop waits for the jobs in flight before it cancels them and releases them (runnable
        /// again at once, the attempt counted): shorter than the process's own grace (30 s), so the release is written
        /// while the database client still runs, not left to the rescue of a worker that stopped heartbeating.
        public var shutdownGrace: Duration = .seconds(25)
        /// Called with the job's kind before every attempt, and after it once what the handler wrote is committed (or
        /// rolled back): a process that also serves reads keeps them from caching across the job's commit.
        public var beforeAttempt: (@Sendable (_ kind: String) -> Void)?
        public var afterAttempt: (@Sendable (_ kind: String) -> Void)?

        public init(
            concurrency: Int = 16, pollInterval: Duration = .seconds(1), heartbeatInterval: Duration = .seconds(5),
            rescueAfter: Duration = .seconds(20), retryPolicy: RetryPolicy = RetryPolicy(),
            historyRetention: Duration = .seconds(7 * 86_400), schedules: [PeriodicSchedule] = []
        ) {
            self.concurrency = concurrency
            self.pollInterval = pollInterval
            self.heartbeatInterval = heartbeatInterval
            self.rescueAfter = rescueAfter
            self.retryPolicy = retryPolicy
            self.historyRetention = historyRetention
            self.schedules = schedules
        }
    }

    public let id: UUID
    let queue: PostgresJobQueue
    let options: Options
    let logger: Logger
    let handlers: [String: any JobHandler]
    private let wakeUp = WakeUp()
    /// Ids of the jobs this worker is running; the maintenance loop releases any other job the database says it holds.
    let running = Mutex(Set<Int64>())
    let completions: CompletionBatcher

    public init(queue: PostgresJobQueue, handlers: [any JobHandler], options: Options = Options(), logger: Logger) {
        self.id = UUID()
        self.queue = queue
        self.handlers = Dictionary(handlers.map { ($0.kind, $0) }, uniquingKeysWith: { _, last in last })
        self.options = options
        var logger = logger
        logger[metadataKey: "worker.id"] = "\(id)"
        self.logger = logger
        self.completions = CompletionBatcher(queue: queue, logger: logger)
    }

    public func run() async throws {
        let host = ProcessInfo.processInfo.hostName
        try await queue.heartbeat(workerID: id, host: host)
        logger.info("worker started", metadata: ["worker.concurrency": "\(options.concurrency)"])
        await withDiscardingTaskGroup { group in
            group.addTask { await self.maintenanceLoop(host: host) }
            group.addTask { await self.listenLoop() }
            group.addTask { await self.completions.run() }
            await withGracefulShutdownHandler {
                await self.claimLoop(group: &group)
            } onGracefulShutdown: {
                self.logger.info("worker stopping: no more claims, finishing the jobs in flight")
                self.wakeUp.signal()
            }
            // Claiming stopped: wait for in-flight jobs (up to the grace), write their completions, then end the
            // background loops and cancel the jobs still running.
            let giveUp = ContinuousClock.now + options.shutdownGrace
            while !running.withLock({ $0.isEmpty }) && !Task.isCancelled && ContinuousClock.now < giveUp {
                await wakeUp.wait(timeout: .milliseconds(100))
            }
            for _ in 0..<50 where !completions.isEmpty {
                await completions.flush()
                if !completions.isEmpty { try? await Task.sleep(for: .milliseconds(100)) }
            }
            group.cancelAll()
        }
        // Jobs cancelled at the grace's end could not record their outcome: they are released now.
        await releaseAtStop()
        logger.info("worker stopped")
    }

    /// How long the worker waits for one database step outside a job attempt — a claim, the next due time, a
    /// maintenance pass, recording an outcome, a completion batch — before it gives up on it. postgres-nio can leave
    /// a statement unanswered when its connection closed under it (see `ClosedConnectionWatch`; not every statement
    /// goes through it), and a loop waiting on one would stop for good.
    static let databaseTimeout: Duration = .seconds(15)

    private func claimLoop(group: inout DiscardingTaskGroup) async {
        let claimBatch = min(options.concurrency, max(1, options.claimBatch ?? options.concurrency / 4))
        var backlog = false
        while !Task.isShuttingDownGracefully && !Task.isCancelled {
            let free = options.concurrency - running.withLock { $0.count }
            let claimStarted = Date()
            var claimedFull = false
            if free > 0 && (free >= claimBatch || !backlog) {
                do {
                    // A claim whose answer is lost to the deadline is released by the maintenance loop after
                    // `orphanGrace`.
                    let jobs = try await claimLoopStep { [queue, id] in try await queue.claim(limit: free, workerID: id) }
                    claimedFull = jobs.count == free
                    backlog = claimedFull
                    for batch in transactionBatches(of: jobs) {
                        running.withLock { for job in batch { _ = $0.insert(job.id) } }
                        group.addTask {
                            await self.execute(batch)
                            self.running.withLock { for job in batch { _ = $0.remove(job.id) } }
                            self.wakeUp.signal()
                        }
                    }
                } catch let error as JobQueueError where error.code == .stopping {
                    logger.info("claim given up: the worker is stopping", metadata: ["error": "\(error)"])
                } catch {
                    logger.warning("claim failed", metadata: ["error": "\(String(reflecting: error))"])
                }
            } else if free > 0 {
                // Backlogged with fewer than `claimBatch` slots free: the next finished job wakes the loop. Jobs
                // that run for long (deliveries to a slow endpoint) leave the free slots idle for a poll interval at
                // most.
                let waitStarted = ContinuousClock.now
                await wakeUp.wait(timeout: options.pollInterval)
                if ContinuousClock.now - waitStarted >= options.pollInterval { backlog = false }
                continue
            }
            if !claimedFull || free == 0 {
                await wakeUp.wait(timeout: await idleWait(free: free, claimStarted: claimStarted))
            }
        }
    }

    /// How long to wait for a wake-up: until the next delayed job is due, at most the poll interval.
    private func idleWait(free: Int, claimStarted: Date) async -> Duration {
        guard free > 0, !Task.isShuttingDownGracefully, let next = try? await claimLoopStep({ [queue] in try await queue.nextRunAt() }) else {
            return options.pollInterval
        }
        let seconds = next.timeIntervalSinceNow
        if seconds <= 0 {
            // Due since the claim began: it became due meanwhile, claim it now. Due before and still not claimed: it
            // is blocked by its concurrency key, and its blocker's completion wakes us.
            return next > claimStarted ? .zero : options.pollInterval
        }
        return min(options.pollInterval, .milliseconds(Int64(seconds * 1000) + 1))
    }

    func execute(_ job: ClaimedJob) async {
        var logger = self.logger
        logger[metadataKey: "job.id"] = "\(job.id)"
        logger[metadataKey: "job.kind"] = "\(job.kind)"
        logger[metadataKey: "job.attempt"] = "\(job.attempt)"
        let execution = JobExecution(job: job, queue: queue)
        let started = ContinuousClock.now
        let outcome: JobMetrics.Outcome
        options.beforeAttempt?(job.kind)
        do {
            guard let handler = handlers[job.kind] else {
                throw JobQueueError(.invalidArguments, "no handler for job kind \(job.kind)")
            }
            try await Self.run(handler, execution)
            if !execution.isCompleted { completions.add(job) }
            logger.debug("job completed")
            outcome = .completed
        } catch {
            outcome = await recordFailure(of: job, error: error, logger: logger)
        }
        options.afterAttempt?(job.kind)
        JobMetrics.record(kind: job.kind, outcome: outcome, duration: ContinuousClock.now - started)
    }

    /// Runs one attempt, giving up on it when it exceeds the handler's timeout — without waiting for a handler that
    /// does not notice the cancellation (a query on a connection the database dropped); attempt fencing keeps such a
    /// straggler from completing the job later.
    private static func run(_ handler: any JobHandler, _ execution: JobExecution) async throws {
        do {
            try await withDeadline(handler.timeout) { try await handler.run(execution) }
        } catch is DeadlineExceeded {
            throw JobQueueError(.timedOut, "attempt exceeded its \(handler.timeout) timeout")
        }
    }

    private func recordFailure(of job: ClaimedJob, error: any Error, logger: Logger) async -> JobMetrics.Outcome {
        do {
            return try await withDeadline(Self.databaseTimeout) { try await self.record(error, of: job, logger: logger) }
        } catch {
            // Cancelled at the stop's grace: the stop releases it (`releaseAtStop`), recording the attempt.
            if Task.isCancelled {
                logger.info("job cancelled by the stop; released with the worker's other jobs")
                return .failed
            }
            // The job stays running under this worker's id; the maintenance loop releases it after `orphanGrace`.
            logger.error("could not record job outcome", metadata: ["error": "\(String(reflecting: error))"])
            return .failed
        }
    }

    private func record(_ error: any Error, of job: ClaimedJob, logger: Logger) async throws -> JobMetrics.Outcome {
        switch Self.cause(of: error) {
        case JobFailure.snooze(let until):
            try await queue.snooze(job, until: until)
            logger.debug("job snoozed", metadata: ["job.run_at": "\(until)"])
            return .snoozed
        case JobFailure.discard(let reason):
            try await queue.discard(job, reason: reason)
            logger.warning("job discarded", metadata: ["error": "\(reason)"])
            return .discarded
        default:
            let description = Self.describe(error)
            let retryAt = Date().addingTimeInterval(options.retryPolicy.delay(afterAttempt: job.attempt))
            let state = try await queue.fail(job, error: description, retryAt: retryAt)
            logger.warning("job attempt failed", metadata: ["job.state": "\(state?.rawValue ?? "claim lost")", "error": "\(description)"])
            return state == .failed ? .failed : .retried
        }
    }

    private func listenLoop() async {
        while !Task.isCancelled {
            do {
                try await queue.client.withConnection { connection in
                    try await connection.listen(on: PostgresJobQueue.wakeUpChannel) { notifications in
                        for try await _ in notifications { self.wakeUp.signal() }
                    }
                }
            } catch {
                if Task.isCancelled { return }
                logger.debug("listen connection lost; polling until it is back", metadata: ["error": "\(error)"])
            }
            try? await Task.sleep(for: .seconds(1))
        }
    }

    static func describe(_ error: any Error) -> String {
        switch cause(of: error) {
        case let error as PSQLError: return "database error \(error.serverInfo?[.sqlState] ?? error.code.description)"
        case is PostgresTransactionError: return "transaction failed"
        case let error: return String(describing: error)
        }
    }

    /// What a handler threw: `withTransaction` wraps what its closure throws (a ``JobFailure`` too) in a
    /// `PostgresTransactionError`.
    static func cause(of error: any Error) -> any Error {
        if let error = error as? PostgresTransactionError, let inner = error.closureError { return cause(of: inner) }
        return error
    }
}
