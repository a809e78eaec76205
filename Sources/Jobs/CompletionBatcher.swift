import Logging
import StatementFencing
import Synchronization

/// Collects completions of jobs whose handlers did not complete them transactionally, and writes them in batches —
/// one statement per batch — every few milliseconds or as soon as a batch is full. A failed write is retried.
final class CompletionBatcher: Sendable {
    private let pending = Mutex<[ClaimedJob]>([])
    private let queue: PostgresJobQueue
    private let maximumBatch: Int
    private let interval: Duration
    private let wakeUp = WakeUp()
    private let logger: Logger

    init(queue: PostgresJobQueue, maximumBatch: Int = 1_000, interval: Duration = .milliseconds(20), logger: Logger) {
        self.queue = queue
        self.maximumBatch = maximumBatch
        self.interval = interval
        self.logger = logger
    }

    var isEmpty: Bool { pending.withLock { $0.isEmpty } }

    /// Ids of the jobs waiting for their completion to be written.
    var pendingIds: Set<Int64> { pending.withLock { Set($0.map(\.id)) } }

    func add(_ job: ClaimedJob) {
        let count = pending.withLock { pending in
            pending.append(job)
            return pending.count
        }
        if count >= maximumBatch { wakeUp.signal() }
    }

    /// Flushes until cancelled.
    func run() async {
        while !Task.isCancelled {
            await wakeUp.wait(timeout: interval)
            await flush()
        }
    }

    /// Writes everything pending; on failure the jobs stay pending for the next flush.
    func flush() async {
        while true {
            let batch = pending.withLock { pending -> [ClaimedJob] in
                let batch = Array(pending.prefix(maximumBatch))
                pending.removeFirst(batch.count)
                return batch
            }
            guard !batch.isEmpty else { return }
            do {
                let completed = try await withDeadline(JobWorker.databaseTimeout) { [queue] in try await queue.complete(batch) }
                if completed < batch.count {
                    logger.warning("completions lost their claim", metadata: ["jobs.lost": "\(batch.count - completed)"])
                }
            } catch {
                pending.withLock { $0.insert(contentsOf: batch, at: 0) }
                logger.warning("completion batch failed; will retry", metadata: ["error": "\(String(reflecting: error))"])
                return
            }
        }
    }
}
