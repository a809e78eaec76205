import Foundation

/// Runs `operation`, giving up after `timeout`: a dead database turns into a quick 503, a one-line CLI error, or a
/// failed job attempt instead of a hang. On timeout the operation is cancelled and *not* waited for: a database
/// driver that is slow to notice cancellation cannot stretch the deadline.
public func withDeadline<Result: Sendable>(
    _ timeout: Duration, _ operation: @escaping @Sendable () async throws -> Result
) async throws -> Result {
    let outcome = FirstOutcome<Result>()
    return try await withTaskCancellationHandler {
        try await withCheckedThrowingContinuation { continuation in
            outcome.install(continuation)
            let work = Task {
                do { outcome.resume(with: .success(try await operation())) } catch { outcome.resume(with: .failure(error)) }
            }
            // A `DeadlineTimer`, not a sleeping task: a cancelled `Task.sleep` keeps its task and timer allocated until
            // the sleep's original deadline, so every call would hold memory for the whole `timeout`.
            let timer = DeadlineTimer(after: timeout) {
                outcome.resume(with: .failure(DeadlineExceeded()))
                work.cancel()
            }
            outcome.onResume { timer.cancel() }
        }
    } onCancel: {
        outcome.resume(with: .failure(CancellationError()))
    }
}

/// Thrown by ``withDeadline(_:_:)`` when the operation did not finish in time.
public struct DeadlineExceeded: Error {}

/// Resumes a continuation with whichever outcome comes first; later ones are dropped.
package final class FirstOutcome<Value: Sendable>: @unchecked Sendable {
    private let lock = NSLock()
    private var continuation: CheckedContinuation<Value, any Error>?
    private var early: Swift.Result<Value, any Error>?
    private var resumed = false
    private var cleanup: (@Sendable () -> Void)?

    package func install(_ continuation: CheckedContinuation<Value, any Error>) {
        let pending: Swift.Result<Value, any Error>? = lock.withLock {
            if let early {
                resumed = true
                return early
            }
            self.continuation = continuation
            return nil
        }
        if let pending { continuation.resume(with: pending) }
    }

    package func onResume(_ action: @escaping @Sendable () -> Void) {
        let runNow = lock.withLock {
            if resumed { return true }
            cleanup = action
            return false
        }
        if runNow { action() }
    }

    package func resume(with result: Swift.Result<Value, any Error>) {
        let (target, action): (CheckedContinuation<Value, any Error>?, (@Sendable () -> Void)?) = lock.withLock {
            guard !resumed else { return (nil, nil) }
            guard let continuation else {
                if early == nil { early = result }
                return (nil, nil)
            }
            resumed = true
            self.continuation = nil
            return (continuation, cleanup)
        }
        target?.resume(with: result)
        action?()
    }
}
