import Foundation
import StatementFencing

extension JobWorker {
    /// The lease that elects one maintainer among all workers.
    static let maintenanceLease = "maintenance"

    /// Every heartbeat: refresh this worker's heartbeat, enqueue due periodic slots, and — while holding the
    /// maintenance lease — rescue jobs of dead workers and, every minute, prune old history.
    func maintenanceLoop(host: String) async {
        var lastPrune = ContinuousClock.now - .seconds(3600)
        while !Task.isCancelled {
            do {
                try await Task.sleep(for: options.heartbeatInterval)
            } catch { return }
            do {
                let prune = ContinuousClock.now - lastPrune > .seconds(60)
                if try await withDeadline(Self.databaseTimeout, { try await self.maintain(host: host, prune: prune) }) { lastPrune = .now }
            } catch {
                // Cancelled by the stop: not a failure to report.
                if Task.isCancelled { return }
                logger.warning("maintenance failed", metadata: ["error": "\(String(reflecting: error))"])
            }
        }
    }

    /// One maintenance pass; returns whether it pruned history (only the maintainer does, when `prune`).
    private func maintain(host: String, prune: Bool) async throws -> Bool {
        try await queue.heartbeat(workerID: id, host: host)
        let released = try await queue.releaseUnknownJobs(
            of: id, keeping: running.withLock { $0 }.union(completions.pendingIds), grace: options.orphanGrace)
        if released > 0 { logger.warning("released jobs whose outcome was lost", metadata: ["jobs.released": "\(released)"]) }
        for schedule in options.schedules {
            let enqueued = try await queue.enqueueDueSlots(of: schedule, now: Date())
            if enqueued > 0 { logger.debug("periodic slots enqueued", metadata: ["schedule": "\(schedule.name)", "jobs": "\(enqueued)"]) }
        }
        guard try await queue.acquireLease(Self.maintenanceLease, holder: id, for: options.heartbeatInterval * 3) else {
            return false
        }
        let rescued = try await queue.rescueAbandonedJobs(staleAfter: options.rescueAfter)
        if rescued > 0 {
            JobMetrics.rescues.increment(by: rescued)
            logger.warning("rescued jobs of stopped workers", metadata: ["jobs.rescued": "\(rescued)"])
        }
        guard prune else { return false }
        let pruned = try await queue.pruneHistory(olderThan: options.historyRetention)
        if pruned > 0 { logger.info("pruned job history", metadata: ["jobs.pruned": "\(pruned)"]) }
        return true
    }
}
