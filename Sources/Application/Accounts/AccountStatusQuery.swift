import Credits
import Foundation
import Logging
import Metrics
import Persistence
import PostgresNIO
import StatementFencing
import Subscriptions

/// An account's status (the service API, the dashboard and `accounts show`): its subscriptions and credits at an
/// instant, read on one connection. Looking never writes: grants that are due count without being written.
public struct AccountStatusQuery: Sendable {
    private let client: PostgresClient
    private let ledger: CreditLedger
    /// Serves reads outside transactions when given.
    private let cache: AccountStatusCache?
    /// A streaming replica for the reads the cache misses, when its positions (kept by the cache) show it has
    /// replayed the account's last change; the primary otherwise.
    private let replica: PostgresClient?
    /// Every tier's feature values, resolved once.
    private let featureTable: [String: [String: FeatureValue]]

    /// `storekeeper_status_reads_total{source}`: status reads answered from this process's cache and from the database
    /// — what tells an operator (and the benchmarks) whether reads are being served warm. Made with the query, after
    /// the metrics backend is bootstrapped (a static would bind to whatever backend came first), and both series
    /// exist from the first scrape.
    private let fromCache: Counter
    private let fromDatabase: Counter
    private let fromReplica: Counter
    private let logger: Logger

    /// - Parameter replica: a read replica for reads the cache misses; only used with a cache, which knows what the
    ///   replica has replayed.
    public init(client: PostgresClient, ledger: CreditLedger, cache: AccountStatusCache? = nil, replica: PostgresClient? = nil, logger: Logger) {
        self.fromCache = Counter(label: "storekeeper_status_reads_total", dimensions: [("source", "cache")])
        self.fromDatabase = Counter(label: "storekeeper_status_reads_total", dimensions: [("source", "database")])
        self.fromReplica = Counter(label: "storekeeper_status_reads_total", dimensions: [("source", "replica")])
        self.client = client
        self.ledger = ledger
        self.cache = cache
        self.replica = cache == nil ? nil : replica
        self.logger = logger
        self.featureTable = ledger.catalogue.featureTable()
    }

    /// The account's standing at `now` (read-only: grants that are due count without being written), from the cache
    /// when it holds the account.
    public func status(of account: AccountID, now: Date) async throws -> AccountStanding {
        if let cached = cache?.inputs(of: account) {
            fromCache.increment()
            return evaluate(cached, account: account, now: now)
        }
        let readSince = cache?.beginRead()
        let inputs = try await read(account, now: now)
        if let cache, let readSince { cache.store(inputs, of: account, readSince: readSince) }
        return evaluate(inputs, account: account, now: now)
    }

    /// How long a read on the replica may take before the primary is asked instead: a replica that stopped answering
    /// must not hold status reads up (its tracker stops sending reads there once it notices).
    static let replicaDeadline: Duration = .milliseconds(250)

    /// A miss: from the replica when it has replayed the account's last heard change, from the primary otherwise or
    /// when the replica fails. The replica's position is read on the read's own connection, before the read (whose
    /// snapshot is then at least as recent): the tracker's may have reached another standby, or one since restarted
    /// from an earlier point.
    private func read(_ account: AccountID, now: Date) async throws -> AccountStatusCache.Inputs {
        if let replica, let required = cache?.replicaRequirement(of: account) {
            do {
                let inputs = try await withDeadline(Self.replicaDeadline) { () -> AccountStatusCache.Inputs? in
                    try await replica.withFencedConnection { connection in
                        guard try await self.replayed(on: connection) >= required else { return nil }
                        return try await self.inputs(of: account, now: now, on: connection)
                    }
                }
                if let inputs {
                    fromReplica.increment()
                    return inputs
                }
            } catch is CancellationError {
                throw CancellationError()
            } catch {
                logger.debug("a status read on the replica failed; read on the primary", metadata: ["error": "\(String(reflecting: error))"])
            }
        }
        fromDatabase.increment()
        return try await client.withConnection { try await self.inputs(of: account, now: now, on: $0) }
    }

    /// The account's standing at `now`, read on the caller's connection (inside a transaction: as that transaction
    /// sees it).
    public func status(of account: AccountID, now: Date, on connection: PostgresConnection) async throws -> AccountStanding {
        evaluate(try await inputs(of: account, now: now, on: connection), account: account, now: now)
    }

    /// What the status is computed from: subscriptions, grants and purchases, and buckets live at `now` or later.
    func inputs(of account: AccountID, now: Date, on connection: PostgresConnection) async throws -> AccountStatusCache.Inputs {
        try await ledger.statusInputs(of: account, at: now, orLater: true, on: connection)
    }

    /// The standing at `now` from its inputs: the buckets live then, and the grants due by then counted as if written.
    func evaluate(_ inputs: AccountStatusCache.Inputs, account: AccountID, now: Date) -> AccountStanding {
        AccountStanding.evaluate(
            account: account, subscriptions: inputs.subscriptions, records: inputs.records,
            live: inputs.buckets.filter { $0.bucket.isLive(at: now) }, catalogue: ledger.catalogue, now: now, featureTable: featureTable,
            held: inputs.held(at: now), heldWithoutBuckets: inputs.heldWithoutBuckets)
    }

    /// The replay position of the server `connection` reaches; 0 when it is not a standby in recovery.
    private func replayed(on connection: PostgresConnection) async throws -> UInt64 {
        let rows = try await connection.query(PostgresQuery(unsafeSQL: ReplicaPositions.replayedPositionSQL), logger: logger)
        for try await position in rows.decode(Int64?.self) { return position.map { UInt64(max($0, 0)) } ?? 0 }
        return 0
    }

    /// The status document of `GET /v1/accounts/{id}/status`, from the cache when it holds the account.
    public func document(of account: AccountID, now: Date) async throws -> AccountStatusResponse {
        AccountStatusResponse(accountId: account, standing: try await status(of: account, now: now), now: now)
    }

    /// The status document from the cache alone: `nil` when the cache does not hold the account.
    public func cachedDocument(of account: AccountID, now: Date) -> AccountStatusResponse? {
        guard let cached = cache?.inputs(of: account) else { return nil }
        fromCache.increment()
        return AccountStatusResponse(accountId: account, standing: evaluate(cached, account: account, now: now), now: now)
    }

    /// The status document at `now` from inputs read already.
    public func document(from inputs: AccountStatusCache.Inputs, of account: AccountID, now: Date) -> AccountStatusResponse {
        AccountStatusResponse(accountId: account, standing: evaluate(inputs, account: account, now: now), now: now)
    }

    /// The status document, read on the caller's connection.
    public func document(of account: AccountID, now: Date, on connection: PostgresConnection) async throws -> AccountStatusResponse {
        AccountStatusResponse(accountId: account, standing: try await status(of: account, now: now, on: connection), now: now)
    }
}
