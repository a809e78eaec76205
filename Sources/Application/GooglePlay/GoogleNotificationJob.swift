import Events
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
    private let subscriptions: GooglePlaySubscriptions
    private let notifications: GoogleNotificationStore
    private let logger: Logger

    public init(client: PostgresClient, subscriptions: GooglePlaySubscriptions, logger: Logger) {
        self.client = client
        self.subscriptions = subscriptions
        self.notifications = GoogleNotificationStore(logger: logger)
        self.logger = logger
    }

    /// What processing a notification came to (recorded in `google_notifications.outcome`), besides a read's own
    /// outcome (``GooglePlaySubscriptions/Outcome``: `read`, `not_found`, `refused`).
    enum Outcome: String {
        /// The token is filed; nothing was read (no service account configured, or not a subscription's token yet).
        case recorded
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
        case .subscription(let type, let token):
            guard let play = subscriptions.play else { return try await finish(stored.messageId, .recorded, execution, filing: notification) }
            let messageId = stored.messageId
            let cause = EventCause(eventId: messageId, notificationType: type.name, originalTransactionId: token, signedDate: notification.eventTime)
            _ = try await subscriptions.refresh(
                token, using: play, cause: cause,
                also: { [notifications] connection, outcome in
                    try await notifications.recordToken(notification, messageId: messageId, on: connection)
                    try await notifications.markProcessed(messageId, outcome: outcome.rawValue, on: connection)
                    try await execution.complete(on: connection)
                })
        case .oneTimeProduct, .voidedPurchase, .pendingRefundReview:
            try await finish(stored.messageId, .recorded, execution, filing: notification)
        }
    }

    private func finish(_ messageId: String, _ outcome: Outcome, _ execution: JobExecution, filing notification: DeveloperNotification? = nil) async throws {
        try await client.withTransaction(logger: logger) { connection in
            if let notification { try await notifications.recordToken(notification, messageId: messageId, on: connection) }
            try await notifications.markProcessed(messageId, outcome: outcome.rawValue, on: connection)
            try await execution.complete(on: connection)
        }
    }
}
