import Foundation
import GooglePlay
import GooglePlayAPI
import Jobs
import Logging
import Persistence
import PostgresNIO

/// Processes a stored Google Play notification. A notification only names the purchase token that changed: the job
/// files the token, and — for a subscription, when the Play Developer API is configured — reads the token's state
/// (`purchases.subscriptionsv2.get`), keeps the read, and derives the token's subscription (its whole chain) again
/// from every read held. Any order and any number of deliveries give the same result. A test notification from Play
/// Console is recorded as `test`, so an operator setting up the topic sees it arrive.
public struct GoogleNotificationJob: JobHandler {
    public let kind = GoogleInbox.jobKind
    /// Play calls with their retries, then the database work.
    public let timeout: Duration = .seconds(120)
    private let client: PostgresClient
    private let play: GooglePlayClient?
    private let notifications: GoogleNotificationStore
    private let subscriptions: GoogleSubscriptionStore
    private let clock: @Sendable () -> Date
    private let logger: Logger

    public init(client: PostgresClient, play: GooglePlayClient?, clock: @escaping @Sendable () -> Date, logger: Logger) {
        self.client = client
        self.play = play
        self.notifications = GoogleNotificationStore(logger: logger)
        self.subscriptions = GoogleSubscriptionStore(logger: logger)
        self.clock = clock
        self.logger = logger
    }

    /// What processing a notification came to (recorded in `google_notifications.outcome`).
    enum Outcome: String {
        /// The token was read and its subscription derived.
        case read
        /// The token is filed; nothing was read (no service account configured, or not a subscription's token yet).
        case recorded
        /// Google does not know the token (another app's, or expired more than 60 days ago).
        case notFound = "not_found"
        /// Google refused the read for good (400), or answered something that is not a subscription.
        case refused
        /// Play Console's test notification.
        case test
        /// A kind of notification Storekeeper does not know: kept, nothing done.
        case unknown
    }

    public func run(_ execution: JobExecution) async throws {
        let arguments = try execution.job.decodeArguments(as: GoogleInbox.JobArguments.self)
        guard let stored = try await client.withConnection({ try await notifications.notification(arguments.messageId, on: $0) }) else {
            throw JobFailure.discard("Google notification \(arguments.messageId) is not stored")
        }
        let notification = stored.notification
        switch notification.content {
        case .test:
            return try await finish(stored.messageId, .test, execution)
        case .unknown:
            return try await finish(stored.messageId, .unknown, execution)
        case .subscription(_, let token):
            guard let play else { return try await finish(stored.messageId, .recorded, execution, filing: notification) }
            // Stamped when asked, not when answered: of two reads in flight, the one asked later saw the later state,
            // whichever answer arrived first.
            let requestedAt = clock()
            let answer: (purchase: SubscriptionPurchaseV2, body: [UInt8])
            switch await Self.read(token, from: play) {
            case .success(let read): answer = read
            case .failure(let error) where error.kind == .notFound:
                return try await finish(stored.messageId, .notFound, execution, filing: notification)
            case .failure(let error) where error.kind == .refused || error.kind == .invalidResponse:
                // Google will not answer otherwise however often it is asked (a 400 "Invalid Value" for another
                // app's token, an answer that is not a SubscriptionPurchaseV2): recorded, not retried for hours.
                logger.warning("Play refused to read a token", metadata: ["google.error": "\(error)"])
                return try await finish(stored.messageId, .refused, execution, filing: notification)
            case .failure(let error):
                throw error
            }
            let read = PlaySubscriptionRead(purchaseToken: token, readAt: requestedAt, purchase: answer.purchase)
            try await client.withTransaction(logger: logger) { connection in
                try await notifications.recordToken(notification, messageId: stored.messageId, on: connection)
                try await subscriptions.insert(read, body: answer.body, on: connection)
                try await derive(from: token, on: connection)
                try await notifications.markProcessed(stored.messageId, outcome: Outcome.read.rawValue, on: connection)
                try await execution.complete(on: connection)
            }
        case .oneTimeProduct, .voidedPurchase, .pendingRefundReview:
            try await finish(stored.messageId, .recorded, execution, filing: notification)
        }
    }

    /// The token's state now, or why Google did not give it.
    private static func read(_ token: String, from play: GooglePlayClient) async -> Result<(purchase: SubscriptionPurchaseV2, body: [UInt8]), GooglePlayAPIError> {
        do {
            return .success(try await play.subscription(token))
        } catch {
            return .failure(error)
        }
    }

    /// Derives the chain of `token` again from every read of it and stores the result.
    private func derive(from token: String, on connection: PostgresConnection) async throws {
        try await subscriptions.lockDerivation(on: connection)
        let tokens = try await subscriptions.chain(of: token, on: connection)
        let derived = PlaySubscriptionDerivation.derive(try await subscriptions.reads(of: tokens, on: connection))
        try await subscriptions.replace(derived, covering: tokens, at: clock(), on: connection)
    }

    private func finish(_ messageId: String, _ outcome: Outcome, _ execution: JobExecution, filing notification: DeveloperNotification? = nil) async throws {
        try await client.withTransaction(logger: logger) { connection in
            if let notification { try await notifications.recordToken(notification, messageId: messageId, on: connection) }
            try await notifications.markProcessed(messageId, outcome: outcome.rawValue, on: connection)
            try await execution.complete(on: connection)
        }
    }
}
