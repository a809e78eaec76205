import Synchronization

/// Wakes workers after jobs were enqueued without a NOTIFY of their own (the intake's hot path): ``signal()`` after
/// a commit sends one NOTIFY; signals arriving while it is on its way are coalesced into one more. So a burst of
/// thousands of enqueues costs a handful of NOTIFYs, and no enqueue waits for one.
public final class WorkerNotifier: Sendable {
    private struct State {
        var sending = false
        var again = false
    }

    private let queue: PostgresJobQueue
    private let state = Mutex(State())

    public init(queue: PostgresJobQueue) { self.queue = queue }

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
                // Polling workers pick the job up anyway if this fails (database briefly away).
                _ = try? await withDeadline(JobWorker.databaseTimeout) { [queue] in try await queue.notifyWorkers() }
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
