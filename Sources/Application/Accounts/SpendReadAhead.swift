import Foundation
import Logging
import Metrics
import Persistence
import PostgresNIO
import Synchronization

/// Reads a spend's pages on a connection of its own while the spend waits for its group (``SpendCredits``,
/// sql/0052). A group reads its pages one after another, so a spend whose pages are on the disk holds up every spend
/// behind it; read ahead, beside other spends' reads, they are in memory when its group comes.
///
/// Only for an account that has not spent lately (``RecentSpenders``), and at most ``maximumInFlight`` at once: the
/// read-aheads share the pool the groups lease from, and past that a burst of first spends would queue ahead of the
/// groups themselves. The spend never waits for its read-ahead; its answer cancels one still waiting for a connection.
final class SpendReadAhead: Sendable {
    /// Read-aheads running at once, at most: a few of the pool's connections (36 on two cores).
    static let maximumInFlight = 8

    private let client: PostgresClient
    private let usageRequests: UsageRequests
    private let recent = RecentSpenders()
    private let inFlight = Atomic<Int>(0)
    private let logger: Logger

    private static let read = Counter(label: "storekeeper_spend_read_aheads_total", dimensions: [("outcome", "read")])
    private static let busy = Counter(label: "storekeeper_spend_read_aheads_total", dimensions: [("outcome", "busy")])
    private static let failed = Counter(label: "storekeeper_spend_read_aheads_total", dimensions: [("outcome", "failed")])

    init(client: PostgresClient, usageRequests: UsageRequests, logger: Logger) {
        (self.client, self.usageRequests, self.logger) = (client, usageRequests, logger)
    }

    /// Starts reading `request`'s pages as of `now` when its account has not spent lately and fewer than
    /// ``maximumInFlight`` are running; returns the read, for the spend to cancel once answered.
    func start(for request: UsageRequests.Request, now: Date) -> Task<Void, Never>? {
        guard !recent.noteSpend(from: request.account) else { return nil }
        guard inFlight.add(1, ordering: .relaxed).newValue <= Self.maximumInFlight else {
            inFlight.subtract(1, ordering: .relaxed)
            Self.busy.increment()
            return nil
        }
        return Task {
            defer { inFlight.subtract(1, ordering: .relaxed) }
            do {
                _ = try await client.withConnection { try await self.usageRequests.warmPages(for: request, at: now, on: $0) }
                Self.read.increment()
            } catch {
                // Answered before a connection was free (the pool answers the cancelled lease with an error of its
                // own): nothing left to read ahead of.
                if Task.isCancelled { return }
                // The group makes the same reads and reports what fails; this counts it, so that a read-ahead that
                // always fails (its function missing during a rollout) shows.
                Self.failed.increment()
                logger.debug("reading a spend's pages ahead failed", metadata: ["error": "\(String(reflecting: error))"])
            }
        }
    }
}
