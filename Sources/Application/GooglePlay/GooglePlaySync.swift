import Events
import GooglePlayAPI
import Logging
import Persistence
import PostgresNIO

/// `storekeeper google sync`: reads Play's tokens again — every one filed (a missed notification), or those of a file
/// for a first import — and derives each. A subscription's token is read from `subscriptionsv2`, a one-time product's
/// from `productsv2`; a token Google does not know as its filed kind (a file's line, filed `unknown`; a product token an
/// earlier import filed as a subscription) is tried as the other kind, and filed as what it turned out to be. One
/// token at a time, paced by the client.
public struct GooglePlaySync: Sendable {
    private let client: PostgresClient
    private let subscriptions: GooglePlaySubscriptions
    private let products: GooglePlayProducts
    private let tokens: GoogleNotificationStore
    private let logger: Logger

    public init(client: PostgresClient, subscriptions: GooglePlaySubscriptions, products: GooglePlayProducts, logger: Logger) {
        self.client = client
        self.subscriptions = subscriptions
        self.products = products
        self.tokens = GoogleNotificationStore(logger: logger)
        self.logger = logger
    }

    /// What a sync did.
    public struct Report: Sendable, Equatable {
        public var read = 0
        public var notFound = 0
        public var refused = 0
        /// Tokens that could not be read now (Google or the network away); the sync went on.
        public var failed = 0

        public init(read: Int = 0, notFound: Int = 0, refused: Int = 0, failed: Int = 0) {
            (self.read, self.notFound, self.refused, self.failed) = (read, notFound, refused, failed)
        }
    }

    /// Reads every token again: `given` (a first import: they are filed first, of a kind not known yet), or else every
    /// token filed. `progress` hears how many were done after each batch.
    public func sync(tokens given: [String]?, progress: @Sendable (Int) -> Void = { _ in }) async throws -> Report {
        guard let play = subscriptions.play else {
            throw GooglePlayAPIError(.unauthorized, "STOREKEEPER_GOOGLE_SERVICE_ACCOUNT is not set: Play cannot be read")
        }
        var report = Report()
        var done = 0
        var after = ""
        while true {
            let batch: [(token: String, kind: String)]
            if let given {
                batch = Array(given.dropFirst(done).prefix(500)).map { ($0, "unknown") }
                try await client.withFencedTransaction(logger: logger) { connection in
                    for (token, _) in batch { try await tokens.fileToken(token, kind: "unknown", source: "storekeeper google sync", on: connection) }
                }
            } else {
                let from = after
                batch = try await client.withFencedConnection { try await tokens.filedTokens(after: from, limit: 500, on: $0) }
                after = batch.last?.token ?? after
            }
            if batch.isEmpty { return report }
            for (token, kind) in batch {
                do {
                    switch try await read(token, kind: kind, using: play) {
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

    /// Reads `token` as the kind it is filed as, then — Google not knowing it so — as the other kind (a token filed
    /// before its kind was known, or filed wrong by an earlier import); a read that succeeds files the token as its kind.
    private func read(_ token: String, kind: String, using play: GooglePlayClient) async throws -> GooglePlaySubscriptions.Outcome {
        let cause = EventCause(notificationType: "google_play.sync", originalTransactionId: token)
        let asProduct = { try await products.refresh(token, using: play, cause: cause) }
        let asSubscription = { try await subscriptions.refresh(token, using: play, cause: cause) }
        let order =
            kind == "one_time_product"
            ? [("one_time_product", asProduct), ("subscription", asSubscription)]
            : [("subscription", asSubscription), ("one_time_product", asProduct)]
        let first = try await order[0].1()
        if first == .read { return try await place(token, as: order[0].0, filed: kind) }
        guard try await order[1].1() == .read else { return first }
        return try await place(token, as: order[1].0, filed: kind)
    }

    private func place(_ token: String, as kind: String, filed: String) async throws -> GooglePlaySubscriptions.Outcome {
        if kind != filed { try await client.withFencedConnection { try await tokens.placeToken(token, kind: kind, on: $0) } }
        return .read
    }
}
