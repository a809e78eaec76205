import Synchronization

/// Group commit: callers that arrive while a commit is on its way wait for the next one, which takes all of them
/// (up to `maximumBatch`) in one transaction. Alone, a caller commits at once, as it would without grouping; under
/// load, one fsync and a handful of round trips serve dozens of callers. Each caller learns its own outcome.
///
/// If a group fails, its members are committed again one by one, so a single item the database refuses fails only
/// its own caller; when the database itself is away, every member fails, as each would have alone. A caller that gave
/// up waiting (a deadline) may still be committed: the intake then answered 503 for a stored notification, and
/// Apple's retry is a duplicate.
///
/// A group given a `name` is measured (`storekeeper_commit_group_*{group=<name>}`, see ``CommitGroupMetrics``): how
/// long callers wait for a commit to start, how long commits take and how many callers each takes. The split says
/// whether a slow answer is the database's (commits long) or the process's (waits long for commits that are not).
///
/// ```swift
/// let group = CommitGroup<Row, Bool>(maximumBatch: 64, name: "rows") { rows in try await store.insert(rows) }
/// let inserted = try await group.submit(row)
/// ```
public final class CommitGroup<Item: Sendable, Outcome: Sendable>: Sendable {
    private typealias Waiter = (
        item: Item, continuation: CheckedContinuation<Outcome, any Error>, submitted: ContinuousClock.Instant
    )

    private struct State {
        var waiting: [Waiter] = []
        var committing = false
    }

    private let state = Mutex(State())
    private let maximumBatch: Int
    private let executor: (any TaskExecutor)?
    private let metrics: CommitGroupMetrics?
    private let commit: @Sendable ([Item]) async throws -> [Outcome]

    /// - Parameters:
    ///   - name: the `group` label of its metrics; `nil`: not measured.
    ///   - executor: where the commits run; the event loop of the database connections keeps each round trip from
    ///     waiting for a busy HTTP event loop (see `EventLoopTaskExecutor`). `nil`: the global executor.
    ///   - commit: commits a group in one transaction and returns one outcome per item, in order.
    public init(
        maximumBatch: Int = 64, name: String? = nil, executor: (any TaskExecutor)? = nil,
        commit: @escaping @Sendable ([Item]) async throws -> [Outcome]
    ) {
        precondition(maximumBatch > 0)
        self.maximumBatch = maximumBatch
        self.metrics = name.map(CommitGroupMetrics.init(group:))
        self.executor = executor
        self.commit = commit
    }

    /// Commits `item` with whatever else is waiting, and returns its outcome once the transaction committed.
    public func submit(_ item: Item) async throws -> Outcome {
        // Read before the lock: waiting for it is part of the caller's wait, and the lock is held no longer for it.
        let submitted = ContinuousClock.now
        return try await withCheckedThrowingContinuation { continuation in
            let startsCommitting = state.withLock { state -> Bool in
                state.waiting.append((item, continuation, submitted))
                guard !state.committing else { return false }
                state.committing = true
                return true
            }
            if startsCommitting {
                Task(executorPreference: executor) { await self.commitWhileWaiting() }
            }
        }
    }

    /// Commits groups until nobody waits.
    private func commitWhileWaiting() async {
        while true {
            let group = state.withLock { state -> [Waiter] in
                let group = Array(state.waiting.prefix(maximumBatch))
                state.waiting.removeFirst(group.count)
                if group.isEmpty { state.committing = false }
                return group
            }
            guard !group.isEmpty else { return }
            let started = ContinuousClock.now
            metrics?.started(at: started, submitted: group.lazy.map(\.submitted))
            defer { metrics?.committed(in: .now - started) }
            do {
                try await resume(group, with: commit(group.map(\.item)))
            } catch  where group.count > 1 {
                await commitOneByOne(group)
            } catch {
                group[0].continuation.resume(throwing: error)
            }
        }
    }

    /// After a failed group: each member alone, so one refused item fails only itself. Two failures in a row mean the
    /// database itself is away: the rest fail at once rather than each waiting for its own failure.
    private func commitOneByOne(_ group: [Waiter]) async {
        var failuresInARow = 0
        var lastError: (any Error)?
        for waiter in group {
            if failuresInARow >= 2, let lastError {
                waiter.continuation.resume(throwing: lastError)
                continue
            }
            do {
                try await resume([waiter], with: commit([waiter.item]))
                failuresInARow = 0
            } catch {
                waiter.continuation.resume(throwing: error)
                failuresInARow += 1
                lastError = error
            }
        }
    }

    private func resume(_ group: [Waiter], with outcomes: [Outcome]) {
        precondition(outcomes.count == group.count, "a commit must answer every item of its group")
        for (waiter, outcome) in zip(group, outcomes) { waiter.continuation.resume(returning: outcome) }
    }
}
