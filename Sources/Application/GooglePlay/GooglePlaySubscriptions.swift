import Foundation
import GooglePlay
import GooglePlayAPI
import Logging
import Persistence
import PostgresNIO

/// Brings Play subscriptions up to date: reads a token from the Play Developer API (`subscriptionsv2.get`), keeps the
/// read and derives the token's whole chain again from every read held — for a notification's job, and for
/// `storekeeper google sync` (every known token again, or tokens from a file for a first import).
public struct GooglePlaySubscriptions: Sendable {
    /// What reading a token came to.
    public enum Outcome: String, Sendable {
        /// Read, kept, and its subscription derived.
        case read
        /// Google does not know the token (another app's, or expired more than 60 days ago).
        case notFound = "not_found"
        /// Google refused the read for good (400 "Invalid Value"), or answered something that is not a subscription.
        case refused
    }

    private let client: PostgresClient
    /// `nil` when no service account is configured: nothing can be read.
    public let play: GooglePlayClient?
    private let reads: GoogleSubscriptionStore
    private let tokens: GoogleNotificationStore
    private let clock: @Sendable () -> Date
    private let logger: Logger

    public init(client: PostgresClient, play: GooglePlayClient?, clock: @escaping @Sendable () -> Date, logger: Logger) {
        self.client = client
        self.play = play
        self.reads = GoogleSubscriptionStore(logger: logger)
        self.tokens = GoogleNotificationStore(logger: logger)
        self.clock = clock
        self.logger = logger
    }

    /// Reads `token` and derives its chain, then runs `also` in the same transaction (a job records its outcome and
    /// completes there). What is worth a retry — Google or the network away after the client's own retries — throws.
    public func refresh(
        _ token: String, using play: GooglePlayClient,
        also: @Sendable (PostgresConnection, Outcome) async throws -> Void = { _, _ in }
    ) async throws -> Outcome {
        // Stamped when asked, not when answered: of two reads in flight, the one asked later saw the later state,
        // whichever answer arrived first.
        let requestedAt = clock()
        let answer: (purchase: SubscriptionPurchaseV2, body: [UInt8])
        switch await Self.read(token, from: play) {
        case .success(let read): answer = read
        case .failure(let error) where error.kind == .notFound:
            try await client.withTransaction(logger: logger) { try await also($0, .notFound) }
            return .notFound
        case .failure(let error) where error.kind == .refused || error.kind == .invalidResponse:
            // Google will not answer otherwise however often it is asked: recorded, not retried for hours.
            logger.warning("Play refused to read a token", metadata: ["google.error": "\(error)"])
            try await client.withTransaction(logger: logger) { try await also($0, .refused) }
            return .refused
        case .failure(let error):
            throw error
        }
        let read = PlaySubscriptionRead(purchaseToken: token, readAt: requestedAt, purchase: answer.purchase)
        for attempt in 1... {
            do {
                try await client.withTransaction(logger: logger) { connection in
                    try await reads.insert(read, body: answer.body, on: connection)
                    let chain = try await lockedChain(of: token, on: connection)
                    let derived = PlaySubscriptionDerivation.derive(try await reads.reads(of: chain, on: connection))
                    try await reads.replace(derived, covering: chain, at: clock(), on: connection)
                    try await also(connection, .read)
                    try await reads.markRead(token, at: requestedAt, on: connection)
                }
                return .read
            } catch let error as PostgresTransactionError where error.closureError is ChainGrew && attempt < 10 {
                continue
            }
        }
        return .read
    }

    /// The chain of `token`, every token of it locked, in token order. Two transactions deriving one chain each know
    /// a part of it holding a token the other knows too (a new read names its own token and the one it replaces), so
    /// one waits for the other; other chains are derived in parallel. Locks are taken in one ordered pass, so two
    /// transactions never wait for each other crosswise; a chain that grew meanwhile throws ``ChainGrew`` and the
    /// transaction is run again, its locks released.
    private func lockedChain(of token: String, on connection: PostgresConnection) async throws -> [String] {
        let known = Set(try await reads.chain(of: token, on: connection))
        try await reads.lock(known.sorted(), on: connection)
        let chain = try await reads.chain(of: token, on: connection)
        guard Set(chain).isSubset(of: known) else { throw ChainGrew() }
        return chain
    }

    /// A chain linked to more tokens while its known ones were being locked.
    struct ChainGrew: Error {}

    private static func read(_ token: String, from play: GooglePlayClient) async -> Result<(purchase: SubscriptionPurchaseV2, body: [UInt8]), GooglePlayAPIError> {
        do {
            return .success(try await play.subscription(token))
        } catch {
            return .failure(error)
        }
    }

    /// What a sync did.
    public struct SyncReport: Sendable, Equatable {
        public var read = 0
        public var notFound = 0
        public var refused = 0
        /// Tokens that could not be read now (Google or the network away); the sync went on.
        public var failed = 0

        public init(read: Int = 0, notFound: Int = 0, refused: Int = 0, failed: Int = 0) {
            (self.read, self.notFound, self.refused, self.failed) = (read, notFound, refused, failed)
        }
    }

    /// Reads every token again: `tokens` (a first import: they are filed first), or else every subscription token a
    /// notification named. One at a time, paced by the client.
    public func sync(tokens given: [String]?, progress: @Sendable (Int) -> Void = { _ in }) async throws -> SyncReport {
        guard let play else { throw GooglePlayAPIError(.unauthorized, "STOREKEEPER_GOOGLE_SERVICE_ACCOUNT is not set: Play cannot be read") }
        var report = SyncReport()
        var done = 0
        var after = ""
        while true {
            let batch: [String]
            if let given {
                batch = Array(given.dropFirst(done).prefix(500))
                try await client.withTransaction(logger: logger) { connection in
                    for token in batch { try await tokens.fileToken(token, kind: "subscription", source: "storekeeper google sync", on: connection) }
                }
            } else {
                batch = try await client.withConnection { try await tokens.subscriptionTokens(after: after, limit: 500, on: $0) }
                after = batch.last ?? after
            }
            if batch.isEmpty { return report }
            for token in batch {
                do {
                    switch try await refresh(token, using: play) {
                    case .read: report.read += 1
                    case .notFound: report.notFound += 1
                    case .refused: report.refused += 1
                    }
                } catch {
                    logger.warning("Play token could not be read", metadata: ["google.error": "\(error)"])
                    report.failed += 1
                }
            }
            done += batch.count
            progress(done)
        }
    }
}
