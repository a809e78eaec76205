import Foundation

/// Runs `operation`, giving up after `timeout`: a dead database turns into a quick 503, a one-line CLI error, or a
/// failed job attempt instead of a hang. On timeout the operation is cancelled and *not* waited for: a database
/// driver that is slow to notice cancellation cannot stretch the deadline.
///
/// A caller cancelled while it waits (a request whose client went away) stops waiting at once; the operation is left
/// to finish, as a statement already sent would anyway, and the deadline stays with it: it is cancelled at the
/// deadline like any other, never left running without one. A caller cancelled before the call starts nothing.
public func withDeadline<Result: Sendable>(
    _ timeout: Duration, _ operation: @escaping @Sendable () async throws -> Result
) async throws -> Result {
    let outcome = FirstOutcome<Result>()
    return try await withTaskCancellationHandler {
        try await withCheckedThrowingContinuation { continuation in
            // Cancelled before it began: nothing is started that the caller would not know the end of.
            guard outcome.install(continuation) else { return }
            let work = Task {
                do { outcome.resume(with: .success(try await operation())) } catch { outcome.resume(with: .failure(error)) }
                outcome.operationEnded()
            }
            // A `DeadlineTimer`, not a sleeping task: a cancelled `Task.sleep` keeps its task and timer allocated until
            // the sleep's original deadline, so every call would hold memory for the whole `timeout`.
            let timer = DeadlineTimer(after: timeout) {
                outcome.resume(with: .failure(DeadlineExceeded()))
                work.cancel()
            }
            outcome.whenOperationEnds { timer.cancel() }
        }
    } onCancel: {
        outcome.resume(with: .failure(CancellationError()))
    }
}

/// Thrown by ``withDeadline(_:_:)`` when the operation did not finish in time. Logs show it in words, not as the
/// type's name (operators read it where a replica or the database does not answer). It keeps no timeout: the timer's
/// closure, allocated on every request, would carry it for a deadline that almost never fires.
public struct DeadlineExceeded: Error, CustomStringConvertible {
    public var description: String { "not answered within its deadline" }
}

/// Resumes a continuation with whichever outcome comes first; later ones are dropped. It also runs a clean-up once
/// the operation behind it has ended, which may be after the continuation was resumed (a deadline or a cancelled
/// caller stops waiting for an operation that goes on).
package final class FirstOutcome<Value: Sendable>: @unchecked Sendable {
    private let lock = NSLock()
    private var continuation: CheckedContinuation<Value, any Error>?
    private var early: Swift.Result<Value, any Error>?
    private var resumed = false
    private var ended = false
    private var cleanup: (@Sendable () -> Void)?

    /// Waits with `continuation`; `false` when an outcome had come already and resumed it at once.
    @discardableResult
    package func install(_ continuation: CheckedContinuation<Value, any Error>) -> Bool {
        let pending: Swift.Result<Value, any Error>? = lock.withLock {
            if let early {
                resumed = true
                return early
            }
            self.continuation = continuation
            return nil
        }
        guard let pending else { return true }
        continuation.resume(with: pending)
        return false
    }

    /// Runs `action` when ``operationEnded()`` is called, or now if it was.
    package func whenOperationEnds(_ action: @escaping @Sendable () -> Void) {
        let runNow = lock.withLock {
            if ended { return true }
            cleanup = action
            return false
        }
        if runNow { action() }
    }

    /// The operation has returned or thrown, whether or not anyone still waits for it.
    package func operationEnded() {
        let action = lock.withLock {
            ended = true
            defer { cleanup = nil }
            return cleanup
        }
        action?()
    }

    package func resume(with result: Swift.Result<Value, any Error>) {
        let target: CheckedContinuation<Value, any Error>? = lock.withLock {
            guard !resumed else { return nil }
            guard let continuation else {
                if early == nil { early = result }
                return nil
            }
            resumed = true
            self.continuation = nil
            return continuation
        }
        target?.resume(with: result)
    }
}
