import Foundation
import Logging
import PostgresNIO
import ServiceLifecycle
import Synchronization

/// A worker process's job runner, as a `Service`: claims batches sized to its free slots, runs them with their
/// ``JobHandler``s, heartbeats, rescues jobs of dead workers, and wakes on LISTEN/NOTIFY with polling as the fallback.
///
/// On graceful shutdown it stops claiming, lets in-flight jobs finish (the service group's grace period bounds
/// this), and deregisters.
public final class JobWorker: Service, Sendable {
    /// Tuning knobs; the defaults suit a small deployment.
    public struct Options: Sendable {
        public var concurrency: Int
        public var pollInterval: Duration
        public var heartbeatInterval: Duration
        /// A worker whose heartbeat is older than this is considered dead and its running jobs are rescued.
        public var rescueAfter: Duration
        public var retryPolicy: RetryPolicy

        public init(
            concurrency: Int = 16, pollInterval: Duration = .seconds(1), heartbeatInterval: Duration = .seconds(5),
            rescueAfter: Duration = .seconds(20), retryPolicy: RetryPolicy = RetryPolicy()
        ) {
            self.concurrency = concurrency
            self.pollInterval = pollInterval
            self.heartbeatInterval = heartbeatInterval
            self.rescueAfter = rescueAfter
            self.retryPolicy = retryPolicy
        }
    }

    public let id: UUID
    private let queue: PostgresJobQueue
    private let handlers: [String: any JobHandler]
    private let options: Options
    private let logger: Logger
    private let wakeUp = WakeUp()
    private let running = Mutex(0)

    public init(queue: PostgresJobQueue, handlers: [any JobHandler], options: Options = Options(), logger: Logger) {
        self.id = UUID()
        self.queue = queue
        self.handlers = Dictionary(handlers.map { ($0.kind, $0) }, uniquingKeysWith: { _, last in last })
        self.options = options
        var logger = logger
        logger[metadataKey: "worker.id"] = "\(id)"
        self.logger = logger
    }

    /// Wakes the claim loop now (used when the enqueuer lives in the same process).
    public func wake() { wakeUp.signal() }

    public func run() async throws {
        let host = ProcessInfo.processInfo.hostName
        try await queue.heartbeat(workerID: id, host: host)
        logger.info("worker started", metadata: ["worker.concurrency": "\(options.concurrency)"])
        await withDiscardingTaskGroup { group in
            group.addTask { await self.heartbeatLoop(host: host) }
            group.addTask { await self.listenLoop() }
            await withGracefulShutdownHandler {
                await self.claimLoop(group: &group)
            } onGracefulShutdown: {
                self.wakeUp.signal()
            }
            // Claiming stopped: wait for in-flight jobs, then end the background loops.
            while running.withLock({ $0 }) > 0 && !Task.isCancelled {
                await wakeUp.wait(timeout: .milliseconds(100))
            }
            group.cancelAll()
        }
        try? await queue.deregister(workerID: id)
        logger.info("worker stopped")
    }

    private func claimLoop(group: inout DiscardingTaskGroup) async {
        while !Task.isShuttingDownGracefully && !Task.isCancelled {
            let free = options.concurrency - running.withLock { $0 }
            var claimedFull = false
            if free > 0 {
                do {
                    let jobs = try await queue.claim(limit: free, workerID: id)
                    claimedFull = jobs.count == free
                    for job in jobs {
                        running.withLock { $0 += 1 }
                        group.addTask {
                            await self.execute(job)
                            self.running.withLock { $0 -= 1 }
                            self.wakeUp.signal()
                        }
                    }
                } catch {
                    logger.warning("claim failed", metadata: ["error": "\(String(reflecting: error))"])
                }
            }
            if !claimedFull || free == 0 {
                await wakeUp.wait(timeout: options.pollInterval)
            }
        }
    }

    private func execute(_ job: ClaimedJob) async {
        var logger = self.logger
        logger[metadataKey: "job.id"] = "\(job.id)"
        logger[metadataKey: "job.kind"] = "\(job.kind)"
        logger[metadataKey: "job.attempt"] = "\(job.attempt)"
        let execution = JobExecution(job: job, queue: queue)
        do {
            guard let handler = handlers[job.kind] else {
                throw JobQueueError(.invalidArguments, "no handler for job kind \(job.kind)")
            }
            try await handler.run(execution)
            if !execution.isCompleted {
                try await queue.client.withConnection { try await queue.complete(job, on: $0) }
            }
            logger.debug("job completed")
        } catch {
            let description = Self.describe(error)
            let retryAt: Date?
            if case JobFailure.permanent = error {
                retryAt = nil
            } else {
                retryAt = Date().addingTimeInterval(options.retryPolicy.delay(afterAttempt: job.attempt))
            }
            do {
                let state = try await queue.fail(job, error: description, retryAt: retryAt)
                logger.warning("job attempt failed", metadata: ["job.state": "\(state ?? "claim lost")", "error": "\(description)"])
            } catch {
                logger.error("could not record job failure", metadata: ["error": "\(String(reflecting: error))"])
            }
        }
    }

    private func heartbeatLoop(host: String) async {
        var sinceRescue = Duration.zero
        while !Task.isCancelled {
            do {
                try await Task.sleep(for: options.heartbeatInterval)
            } catch { return }
            do {
                try await queue.heartbeat(workerID: id, host: host)
                sinceRescue += options.heartbeatInterval
                if sinceRescue >= options.rescueAfter / 2 {
                    sinceRescue = .zero
                    let rescued = try await queue.rescueAbandonedJobs(staleAfter: options.rescueAfter)
                    if rescued > 0 { logger.warning("rescued jobs of stopped workers", metadata: ["jobs.rescued": "\(rescued)"]) }
                }
            } catch {
                logger.warning("heartbeat failed", metadata: ["error": "\(String(reflecting: error))"])
            }
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

    private static func describe(_ error: any Error) -> String {
        switch error {
        case JobFailure.permanent(let reason): return reason
        case let error as PSQLError: return "database error \(error.serverInfo?[.sqlState] ?? error.code.description)"
        case let error as PostgresTransactionError:
            if let inner = error.closureError { return describe(inner) }
            return "transaction failed"
        default: return String(describing: error)
        }
    }
}
