import PostgresNIO
import Synchronization

/// Fails statements whose connection closed under them.
///
/// postgres-nio hands a statement to its channel with `channel.write(task, promise: nil)`. When the channel has
/// already closed (the database restarted, or dropped the connection, just before the statement went out), NIO
/// discards the write and the statement's own promise is never completed: the caller waits forever. (The upstream fix,
/// vapor/postgres-nio#487, was reverted in #501.) The PostgreSQL-restart drill hit this: a worker's claim loop stopped
/// for good, an intake group held its connection.
///
/// Every statement ``PostgresConnection/run(_:logger:)`` sends is watched here; a sweep every second fails those whose
/// connection has been closed for two sweeps in a row (postgres-nio fails the statements it did receive at once), so
/// the caller sees an error — a 503, a failed attempt, a retried claim — instead of a hang. One timer serves the whole
/// process; watching a statement costs a dictionary insert and removal, and the task the statement runs in.
final class ClosedConnectionWatch: Sendable {
    static let shared = ClosedConnectionWatch(interval: .seconds(1))

    private struct Watched: Sendable {
        let connection: PostgresConnection
        let fail: @Sendable () -> Void
        var closedSweeps = 0
    }

    private let watched = Mutex<(next: Int, entries: [Int: Watched])>((0, [:]))
    private let timer: SweepTimer  // started once, never stopped

    init(interval: Duration) {
        timer = SweepTimer(interval: interval, leeway: interval / 10)
        timer.onTick { [weak self] in self?.sweep() }
        timer.start()
    }

    /// Runs `operation` (statements on `connection`) and returns its result, or throws ``ConnectionClosedError`` once
    /// the connection has closed and the operation has not finished.
    func fence<Result: Sendable>(
        _ connection: PostgresConnection, _ operation: @escaping @Sendable () async throws -> Result
    ) async throws -> Result {
        let outcome = FirstOutcome<Result>()
        let token = watched.withLock { state in
            let token = state.next
            state.next &+= 1
            state.entries[token] = Watched(connection: connection) {
                outcome.resume(with: .failure(ConnectionClosedError()))
            }
            return token
        }
        defer { _ = watched.withLock { $0.entries.removeValue(forKey: token) } }
        return try await withCheckedThrowingContinuation { continuation in
            outcome.install(continuation)
            // On the connection's own event loop: the statement is written and its answer read there, with no hop
            // to another thread and back.
            Task(executorPreference: EventLoopTaskExecutor(connection.eventLoop)) {
                do { outcome.resume(with: .success(try await operation())) } catch { outcome.resume(with: .failure(error)) }
            }
        }
    }

    private func sweep() {
        let failures = watched.withLock { state -> [@Sendable () -> Void] in
            var failures: [@Sendable () -> Void] = []
            for (token, entry) in state.entries where entry.connection.isClosed {
                if entry.closedSweeps >= 1 {
                    failures.append(entry.fail)
                    state.entries[token] = nil
                } else {
                    state.entries[token]?.closedSweeps += 1
                }
            }
            return failures
        }
        for fail in failures { fail() }
    }
}

/// The database connection closed before a statement on it finished (see ``ClosedConnectionWatch``).
public struct ConnectionClosedError: Error, CustomStringConvertible {
    public var description: String { "the database connection closed before the statement finished" }
}
