import Application
import Logging
import Metrics
import PostgresNIO
import ServiceLifecycle
import StatementFencing

/// Reads, every ``interval``, the WAL positions that tell `serve` which status reads its replica may answer
/// (``ReplicaPositions``): the primary's insert position when heard changes wait for one, then the replica's replay
/// position. A replica that cannot be read, or is no longer in recovery (promoted, or a primary named by mistake),
/// answers nothing until it can be read again as a standby. Each read checks the replica's position again on its own
/// connection; this one only keeps reads from trying a replica that is not there yet.
///
/// `storekeeper_replica_lag_bytes`: the last primary position read less the replica's replay position;
/// `storekeeper_replica_up`: 1 while the replica's position can be read as a standby's, 0 otherwise (the lag then
/// keeps its last value).
public struct ReplicaPositionTracker: Service {
    let primary: PostgresClient
    let replica: PostgresClient
    /// The replica's URL, for a login of its own when its position cannot be read: the pool's failure says only that
    /// nothing answered in time, whether the replica is down, refuses the login or is stalled.
    let replicaURL: DatabaseURL
    let cache: AccountStatusCache
    let logger: Logger
    /// How often positions are read: a change's reads go to the primary for at most about this long past the
    /// replica's replay of it. One query a round on each database.
    let interval: Duration = .milliseconds(10)
    /// A position read slower than this counts as failed.
    static let deadline: Duration = .seconds(1)

    public init(primary: PostgresClient, replica: PostgresClient, replicaURL: DatabaseURL, cache: AccountStatusCache, logger: Logger) {
        self.primary = primary
        self.replica = replica
        self.replicaURL = replicaURL
        self.cache = cache
        self.logger = logger
    }

    public func run() async throws {
        let lag = Gauge(label: "storekeeper_replica_lag_bytes")
        let up = Gauge(label: "storekeeper_replica_up")
        up.record(0)
        await cancelWhenGracefulShutdown {
            var primaryPosition: UInt64?
            // nil before the first reading, so that both the first success and the first failure are logged.
            var replicaFailing: Bool?
            while !Task.isCancelled {
                if let round = cache.replicaPositions({ $0.hasPending ? $0.beginRound() : nil }) ?? nil {
                    do {
                        let position = try await Self.position("SELECT (pg_current_wal_insert_lsn() - '0/0')::bigint", on: primary)
                        cache.replicaPositions { $0.primaryPosition(position, covering: round) }
                        primaryPosition = position
                    } catch {
                        // The changes stay pending: their reads go to the primary, which is what failed here.
                        logger.debug("could not read the primary's WAL position", metadata: ["error": "\(String(reflecting: error))"])
                    }
                }
                do {
                    let replayed = try await Self.position(ReplicaPositions.replayedPositionSQL, on: replica)
                    cache.replicaPositions { $0.replicaReplayed(replayed) }
                    if let primaryPosition { lag.record(Double(primaryPosition > replayed ? primaryPosition - replayed : 0)) }
                    up.record(1)
                    if replicaFailing != false {
                        logger.notice(
                            replicaFailing == nil
                                ? "the read replica answers; status reads that miss the cache may go to it"
                                : "the read replica answers again; status reads that miss the cache may go to it")
                    }
                    replicaFailing = false
                } catch {
                    cache.replicaPositions { $0.replicaUnavailable() }
                    up.record(0)
                    if replicaFailing != true {
                        let cause = await diagnosis(of: error)
                        logger.warning(
                            "cannot read the read replica's replay position (\(cause)); status reads go to the primary",
                            metadata: ["error": "\(String(reflecting: error))"])
                    }
                    replicaFailing = true
                }
                try? await Task.sleep(for: interval)
            }
        }
    }

    /// What a failed read of the replica's position means, in words: for a deadline, what a login of its own finds
    /// (once a failing spell: a login the replica refuses is a line in its log).
    private func diagnosis(of error: any Error) async -> String {
        guard error is DeadlineExceeded else { return "\(error)" }
        switch await replicaURL.login(logger: logger) {
        case .refused(let reason): return "the replica refuses the login of STOREKEEPER_REPLICA_URL: \(reason)"
        case .unreached(let reason): return "the replica is not reached: \(reason)"
        case .accepted: return "the replica accepts a login but did not answer within \(Self.deadline): stalled or overloaded"
        }
    }

    /// A WAL position as a byte count; fails when it is NULL (the replica's on a server not in recovery).
    private static func position(_ sql: String, on client: PostgresClient) async throws -> UInt64 {
        try await withDeadline(deadline) {
            let rows = try await client.fencedQuery(PostgresQuery(unsafeSQL: sql))
            for try await position in rows.decode(Int64?.self) {
                guard let position, position >= 0 else { throw NotInRecovery() }
                return UInt64(position)
            }
            throw NotInRecovery()
        }
    }

    /// The replica named is not a standby (or reported no position).
    struct NotInRecovery: Error, CustomStringConvertible {
        var description: String { "the replica reports no replay position: it is not a standby in recovery" }
    }
}
