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
    /// Read-aheads running at once, at most: 8 of a pool of 36 connections on two cores.
    static let maximumInFlight = 8

    private let client: PostgresClient
    private let usageRequests: UsageRequests
    private let recent = RecentSpenders()
    private let inFlight = Atomic<Int>(0)
    private let failureLogged = Atomic<Bool>(false)
    private let logger: Logger

    private static let read = Counter(label: "storekeeper_spend_read_aheads_total", dimensions: [("outcome", "read")])
    private static let busy = Counter(label: "storekeeper_spend_read_aheads_total", dimensions: [("outcome", "busy")])
    private static let failed = Counter(label: "storekeeper_spend_read_aheads_total", dimensions: [("outcome", "failed")])

    init(client: PostgresClient, usageRequests: UsageRequests, logger: Logger) {
        (self.client, self.usageRequests, self.logger) = (client, usageRequests, logger)
        // Each series exists from the start, at 0, so that a rate or an alert on any of them has one to read.
        _ = (Self.read, Self.busy, Self.failed)
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
                _ = try await client.withConnection { try await self.usageRequests.readPagesAhead(for: request, at: now, on: $0) }
                Self.read.increment()
            } catch let error as PSQLError where error.code == .queryCancelled {
                // Answered before a connection was free (the pool's answer to a cancelled lease): nothing left to
                // read ahead of.
            } catch is CancellationError {
            } catch {
                // The group makes the same reads and reports what fails; this counts it, and says it once a process
                // (at warning: `serve` logs from info), so that a read-ahead that always fails — its function missing
                // or refused — shows without a log line for every first spend.
                Self.failed.increment()
                let level: Logger.Level = failureLogged.exchange(true, ordering: .relaxed) ? .debug : .warning
                logger.log(
                    level: level, "reading a spend's pages ahead failed; the spend went on without",
                    metadata: ["error": "\(String(reflecting: error))"])
            }
        }
    }
}
