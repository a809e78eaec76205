import StatementFencing
import Synchronization

/// A level-triggered wake-up: ``signal()`` wakes the current or the next ``wait(timeout:)``.
final class WakeUp: Sendable {
    private struct State {
        var pending = false
        var waiter: CheckedContinuation<Void, Never>?
    }

    private let state = Mutex(State())

    func signal() {
        let waiter = state.withLock { state -> CheckedContinuation<Void, Never>? in
            if let waiter = state.waiter {
                state.waiter = nil
                return waiter
            }
            state.pending = true
            return nil
        }
        waiter?.resume()
    }

    /// Returns on a signal or after `timeout`, whichever comes first.
    func wait(timeout: Duration) async {
        // A timer of its own: an idle worker waits here all the time, and would keep the shared sweep ticking.
        let timer = DeadlineTimer(after: timeout, sweep: nil) { self.signal() }
        defer { timer.cancel() }
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let resumeNow = state.withLock { state -> Bool in
                    if state.pending {
                        state.pending = false
                        return true
                    }
                    state.waiter = continuation
                    return false
                }
                if resumeNow { continuation.resume() }
            }
        } onCancel: {
            self.signal()
        }
    }
}
