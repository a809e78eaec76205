import StatementFencing
import Synchronization

/// Wakes workers after jobs were enqueued without a NOTIFY of their own (the intake's hot path): ``signal()`` after
/// a commit sends one NOTIFY at once; signals arriving while it is on its way or within `minimumInterval` (30 ms) of
/// it are coalesced into one more at the end of that interval. So a burst of thousands of enqueues costs a handful of
/// NOTIFYs, a steady trickle at most one per interval (and its workers claim a few jobs per wake-up rather than one),
/// and no enqueue waits for one.
public final class WorkerNotifier: Sendable {
    private struct State {
        var sending = false
        var again = false
    }

    private let queue: PostgresJobQueue
    private let minimumInterval: Duration
    private let state = Mutex(State())

    public init(queue: PostgresJobQueue, minimumInterval: Duration = .milliseconds(30)) {
        self.queue = queue
        self.minimumInterval = minimumInterval
    }

    public func signal() {
        let start = state.withLock { state -> Bool in
            if state.sending {
                state.again = true
                return false
            }
            state.sending = true
            return true
        }
        guard start else { return }
        Task {
            while true {
                let sent = ContinuousClock.now
                // Polling workers pick the job up anyway if this fails (database briefly away).
                _ = try? await withDeadline(JobWorker.databaseTimeout) { [queue] in try await queue.notifyWorkers() }
                try? await Task.sleep(until: sent + minimumInterval)
                let more = state.withLock { state -> Bool in
                    if state.again {
                        state.again = false
                        return true
                    }
                    state.sending = false
                    return false
                }
                if !more { return }
            }
        }
    }
}
