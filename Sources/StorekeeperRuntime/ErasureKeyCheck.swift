import Foundation
import Logging
import Persistence
import PostgresNIO
import ServiceLifecycle
import StatementFencing

/// Holds a process to the `STOREKEEPER_ERASURE_KEY` accounts were erased under (sql/0067), once the database answers,
/// and again every ``interval`` while it runs: a process started before the first erasure recorded the key, with
/// another key or none, is ended within that time of it. With another key, or none, erased ids are not recognised:
/// `work` would file Apple's next renewal naming one under the id again, and an erasure by `serve` would not be
/// recognised beside the others. The process then ends with the reason (exit 1), as it does for a setting it cannot
/// use; a database that does not answer yet is waited for, as the pool waits for it.
public struct ErasureKeyCheck: Service {
    /// How often a running process checks again. The lookups of erased ids on the apply path are not checked each
    /// time (a statement more on every first purchase's apply): what a process of another key files in this window
    /// after the first erasure is what it would have filed before it.
    static let interval = Duration.seconds(10)
    /// How long one check may wait for the database before it counts as not answered.
    static let statementTimeout = Duration.seconds(15)

    let client: PostgresClient
    let erased: ErasedAccounts
    let clock: @Sendable () -> Date
    let logger: Logger

    public init(client: PostgresClient, erased: ErasedAccounts, clock: @escaping @Sendable () -> Date, logger: Logger) {
        self.client = client
        self.erased = erased
        self.clock = clock
        self.logger = logger
    }

    /// Checks, then again every ``interval`` until the group shuts it down (a service returning early would end the
    /// process).
    public func run() async throws {
        do {
            try await cancelWhenGracefulShutdown {
                try await confirm()
                while !Task.isCancelled {
                    try await Task.sleep(for: Self.interval)
                    try await confirm()
                }
            }
        } catch is CancellationError {
            // Shutting down.
        }
    }

    /// Returns when the key is the erasures' (or nothing was erased), or when the process is shutting down; throws
    /// ``PersistenceError/Code/erasureKeyDiffers`` when it is not.
    public func confirm() async throws {
        var attempt = 0
        while !Task.isCancelled && !Task.isShuttingDownGracefully {
            do {
                // Under a deadline: a database that holds the connection open without answering (stalled, or the
                // fingerprint's row locked) would otherwise keep the check — and a stop, which waits for it — until it
                // answers; cancelled, the deadline returns at once.
                try await withDeadline(Self.statementTimeout) {
                    try await client.withFencedConnection { try await erased.confirmKey(recording: true, at: clock(), on: $0) }
                }
                return
            } catch let error as PersistenceError where error.code == .erasureKeyDiffers {
                logger.critical("\(error.message)")
                throw error
            } catch {
                // Shutting down while it waited for a connection: nothing to say.
                if Task.isCancelled { return }
                // Not reachable yet: readiness says so; the check comes back until it is.
                attempt += 1
                if attempt == 1 { logger.notice("the erasure key is checked once the database answers", metadata: ["error": "\(error)"]) }
                let pause = Duration.seconds(min(attempt, 5))
                try? await Task.sleep(for: pause)
            }
        }
    }
}

/// A service that starts only once the erasure key is confirmed: `work`'s worker, whose applies file facts under the
/// erased ids' pseudonyms (the check itself runs on beside it).
struct AfterErasureKeyCheck<Wrapped: Service>: Service {
    let check: ErasureKeyCheck
    let service: Wrapped

    func run() async throws {
        // A shutdown while the database does not answer ends the wait at once (the pool would retry for good).
        try await cancelWhenGracefulShutdown { try await check.confirm() }
        // Shut down before the database answered: the key was never confirmed, and there is nothing to start.
        guard !Task.isCancelled && !Task.isShuttingDownGracefully else { return }
        try await service.run()
    }
}
