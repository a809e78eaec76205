import Foundation
import GooglePlayAPI
import Jobs
import Logging
import Persistence
import PostgresNIO

/// Tells Google a Play purchase was granted, once Storekeeper granted it to an account: a subscription or a one-time
/// product is acknowledged, a top-up consumed (which acknowledges it, and lets the customer buy it again). Google
/// refunds a purchase not acknowledged within three days. Enqueued in the transaction that granted the purchase (one
/// job per token) and noted in `google_acknowledgements`, so it survives a crash, is retried with the queue's backoff
/// while Google or the network is away, and shows on the dashboard and in a metric while it waits. A purchase no
/// account holds is not acknowledged: nothing was granted for it, and Google's refund is then the customer's due.
public struct GoogleAcknowledgeJob: JobHandler {
    public static let jobKind = "google-acknowledge"
    public let kind = Self.jobKind
    /// One Play call with its retries.
    public let timeout: Duration = .seconds(60)

    /// What is acknowledged.
    public enum Purchase: String, Codable, Sendable {
        /// `purchases.subscriptions.acknowledge`.
        case subscription
        /// `purchases.products.acknowledge`: a lifetime unlock or a pass.
        case product
        /// `purchases.products.consume`: a top-up.
        case consumable
    }

    public struct Arguments: Codable, Sendable {
        /// The product id (a subscription's without the base plan).
        public var productId: String
        public var purchaseToken: String
        /// Absent in jobs enqueued before one-time products: a subscription.
        public var purchase: Purchase?

        public init(productId: String, purchaseToken: String, purchase: Purchase) {
            self.productId = productId
            self.purchaseToken = purchaseToken
            self.purchase = purchase
        }
    }

    /// Notes the purchase as waiting and enqueues its acknowledgement, in the caller's transaction.
    static func enqueue(
        _ arguments: Arguments, grantedAt: Date, queue: any JobScheduling, store: GoogleProductStore, on connection: PostgresConnection
    ) async throws {
        try await store.awaitAcknowledgement(
            arguments.purchaseToken, kind: (arguments.purchase ?? .subscription).rawValue, productId: arguments.productId, grantedAt: grantedAt,
            on: connection)
        try await queue.enqueue(
            try NewJob(kind: jobKind, arguments: arguments, uniqueKey: "google-acknowledge:\(arguments.purchaseToken)"), on: connection)
    }

    private let client: PostgresClient
    private let play: GooglePlayClient
    private let store: GoogleProductStore
    private let clock: @Sendable () -> Date
    private let logger: Logger

    public init(client: PostgresClient, play: GooglePlayClient, clock: @escaping @Sendable () -> Date, logger: Logger) {
        self.client = client
        self.play = play
        self.store = GoogleProductStore(logger: logger)
        self.clock = clock
        self.logger = logger
    }

    public func run(_ execution: JobExecution) async throws {
        let arguments = try execution.job.decodeArguments(as: Arguments.self)
        let token = arguments.purchaseToken
        switch await Self.acknowledge(arguments, with: play) {
        case .success:
            try await client.withFencedTransaction(logger: logger) { connection in
                try await store.recordAcknowledgement(token, at: clock(), error: nil, on: connection)
                try await execution.complete(on: connection)
            }
        case .failure(let error) where error.kind == .notFound || error.kind == .refused:
            // Google will not take it however often it is asked. When the purchase reads as acknowledged (the app did
            // it, or an earlier answer was lost) nothing is owed; otherwise Google will refund it, and it stays on the
            // dashboard and in the metric with Google's answer for an operator.
            // The read itself failing for now (Google away) is worth a retry, not a verdict.
            let finished: Bool
            switch await Self.isFinished(arguments, by: play) {
            case .success(let answer): finished = answer
            case .failure(let readError):
                if GooglePlaySubscriptions.Outcome(failedRead: readError) == nil { throw readError }
                finished = false
            }
            logger.warning("Play refused an acknowledgement", metadata: ["google.error": "\(error)", "google.acknowledged": "\(finished)"])
            guard finished else {
                try await client.withFencedConnection { try await store.recordAcknowledgement(token, at: nil, error: "\(error)", on: $0) }
                throw JobFailure.discard("Play refused the acknowledgement: \(error)")
            }
            try await client.withFencedTransaction(logger: logger) { connection in
                try await store.recordAcknowledgement(token, at: clock(), error: "\(error)", on: connection)
                try await execution.complete(on: connection)
            }
        case .failure(let error):
            try await client.withFencedConnection { try await store.recordAcknowledgement(token, at: nil, error: "\(error)", on: $0) }
            throw error
        }
    }

    /// Whether Play reads the purchase as acknowledged (or, for a top-up, consumed), or why it could not be read.
    private static func isFinished(_ arguments: Arguments, by play: GooglePlayClient) async -> Result<Bool, GooglePlayAPIError> {
        do {
            switch arguments.purchase ?? .subscription {
            case .subscription:
                let read = try await play.subscription(arguments.purchaseToken)
                return .success(read.purchase.acknowledgementState == "ACKNOWLEDGEMENT_STATE_ACKNOWLEDGED")
            case .product, .consumable:
                let read = try await play.productPurchase(arguments.purchaseToken)
                let consumed = read.purchase.lineItems.contains { $0.consumptionState == "CONSUMPTION_STATE_CONSUMED" }
                return .success(
                    arguments.purchase == .consumable ? consumed : read.purchase.acknowledgementState == "ACKNOWLEDGEMENT_STATE_ACKNOWLEDGED")
            }
        } catch {
            return .failure(error)
        }
    }

    private static func acknowledge(_ arguments: Arguments, with play: GooglePlayClient) async -> Result<Void, GooglePlayAPIError> {
        do {
            switch arguments.purchase ?? .subscription {
            case .subscription: try await play.acknowledge(subscription: arguments.productId, token: arguments.purchaseToken)
            case .product: try await play.finish(product: arguments.productId, token: arguments.purchaseToken, consuming: false)
            case .consumable: try await play.finish(product: arguments.productId, token: arguments.purchaseToken, consuming: true)
            }
            return .success(())
        } catch {
            return .failure(error)
        }
    }
}
