import Foundation
import PostgresNIO
import StatementFencing

extension JobWorker {
    /// The claimed jobs as the worker runs them: those of a ``TransactionalJobHandler``'s kind in groups of up to its
    /// ``TransactionalJobHandler/jobsPerTransaction`` that share a transaction, every other job alone. Oldest first:
    /// the claim's `UPDATE … RETURNING` gives its rows in no promised order.
    func transactionBatches(of jobs: [ClaimedJob]) -> [[ClaimedJob]] {
        var batches: [[ClaimedJob]] = []
        var filling: [String: Int] = [:]
        for job in jobs.sorted(by: { $0.id < $1.id }) {
            if let handler = handlers[job.kind] as? any TransactionalJobHandler, handler.jobsPerTransaction > 1 {
                if let index = filling[job.kind], batches[index].count < handler.jobsPerTransaction {
                    batches[index].append(job)
                    continue
                }
                filling[job.kind] = batches.count
            }
            batches.append([job])
        }
        return batches
    }

    /// Runs a batch of ``transactionBatches(of:)``: several jobs in one transaction, committed together; if any of
    /// them throws (or the batch exceeds its handler's timeout), nothing of the transaction stands and each job runs
    /// alone, its outcome its own.
    func execute(_ batch: [ClaimedJob]) async {
        guard batch.count > 1, let handler = handlers[batch[0].kind] as? any TransactionalJobHandler else {
            for job in batch { await execute(job) }
            return
        }
        let executions = batch.map { JobExecution(job: $0, queue: queue) }
        let started = ContinuousClock.now
        for job in batch { options.beforeAttempt?(job.kind) }
        do {
            try await withDeadline(handler.timeout) { [queue, logger] in
                try await queue.client.withFencedTransaction(logger: logger) { connection in
                    try await handler.run(executions, on: connection)
                }
            }
        } catch {
            for job in batch { options.afterAttempt?(job.kind) }
            logger.debug(
                "a shared transaction rolled back; its jobs run alone",
                metadata: ["job.ids": "\(batch.map(\.id))", "error": "\(Self.describe(error))"])
            for job in batch { await execute(job) }
            return
        }
        let duration = ContinuousClock.now - started
        for execution in executions {
            if !execution.isCompleted { completions.add(execution.job) }
            options.afterAttempt?(execution.job.kind)
            JobMetrics.record(kind: execution.job.kind, outcome: .completed, duration: duration)
        }
    }
}
