import Events
import Foundation
import GooglePlay
import GooglePlayAPI
import Jobs
import Logging
import Persistence
import PostgresNIO

/// Processes a stored Google Play notification. A notification only names the purchase token that changed: the job
/// files the token, and — when the Play Developer API is configured — reads the token's state
/// (`purchases.subscriptionsv2.get` for a subscription, `purchases.productsv2` for a one-time product), keeps the read,
/// and derives the purchase again from every fact held. A voided purchase is recorded and its purchase derived again
/// (``GoogleRefunds``); a refund review opens a refund request. Any order and any number of deliveries give the same
/// result. A test notification from Play Console is recorded as `test`, so an operator setting up the topic sees it
/// arrive.
public struct GoogleNotificationJob: JobHandler {
    public let kind = GoogleInbox.jobKind
    /// Play calls with their retries, then the database work.
    public let timeout: Duration = .seconds(120)
    private let client: PostgresClient
    private let subscriptions: GooglePlaySubscriptions
    private let products: GooglePlayProducts
    private let refunds: GoogleRefunds
    private let notifications: GoogleNotificationStore
    private let logger: Logger

    public init(client: PostgresClient, subscriptions: GooglePlaySubscriptions, products: GooglePlayProducts, refunds: GoogleRefunds, logger: Logger)
    {
        self.client = client
        self.subscriptions = subscriptions
        self.products = products
        self.refunds = refunds
        self.notifications = GoogleNotificationStore(logger: logger)
        self.logger = logger
    }

    /// What processing a notification came to (recorded in `google_notifications.outcome`), besides a read's own
    /// outcome (``GooglePlaySubscriptions/Outcome``: `read`, `not_found`, `refused`).
    enum Outcome: String {
        /// The token is filed; nothing was read (no service account configured, or not a subscription's token yet).
        case recorded
        /// A refund was recorded and what it paid for derived again.
        case voided
        /// A refund review was opened.
        case reviewOpened = "review_opened"
        /// A refund review about an order Storekeeper does not hold for an account (or one opened already).
        case reviewIgnored = "review_ignored"
        /// Play Console's test notification.
        case test
        /// A kind of notification Storekeeper does not know: kept, nothing done.
        case unknown
    }

    public func run(_ execution: JobExecution) async throws {
        let arguments = try execution.job.decodeArguments(as: GoogleInbox.JobArguments.self)
        guard let stored = try await client.withFencedConnection({ try await notifications.notification(arguments.messageId, on: $0) }) else {
            throw JobFailure.discard("Google notification \(arguments.messageId) is not stored")
        }
        let notification = stored.notification
        let messageId = stored.messageId
        let finishing: @Sendable (PostgresConnection, String) async throws -> Void = { [notifications] connection, outcome in
            try await notifications.recordToken(notification, messageId: messageId, on: connection)
            try await notifications.markProcessed(messageId, outcome: outcome, on: connection)
            try await execution.complete(on: connection)
        }
        let reading: @Sendable (PostgresConnection, GooglePlaySubscriptions.Outcome) async throws -> Void = { try await finishing($0, $1.rawValue) }
        switch notification.content {
        case .test:
            return try await finish(messageId, .test, execution)
        case .unknown:
            return try await finish(messageId, .unknown, execution)
        case .subscription(let type, let token):
            guard let play = subscriptions.play else { return try await finish(messageId, .recorded, execution, filing: notification) }
            let cause = EventCause(eventId: messageId, notificationType: type.name, originalTransactionId: token, signedDate: notification.eventTime)
            _ = try await subscriptions.refresh(token, using: play, cause: cause, also: reading)
        case .oneTimeProduct(let type, let token, _):
            guard let play = products.play else { return try await finish(messageId, .recorded, execution, filing: notification) }
            let cause = EventCause(eventId: messageId, notificationType: type.name, originalTransactionId: token, signedDate: notification.eventTime)
            _ = try await products.refresh(token, using: play, cause: cause, also: reading)
        case .voidedPurchase(let token, let orderId, let productType, let refundType):
            let cause = EventCause(
                eventId: messageId, notificationType: "VOIDED_PURCHASE", originalTransactionId: token, signedDate: notification.eventTime)
            let voided = VoidedPurchase(
                purchaseToken: token, orderId: orderId ?? token, voidedAt: stored.occurredAt, isPartial: refundType == 2)
            // Recorded (and derived from what is held) first, so a read that fails cannot lose it; the purchase is then
            // read again when Play can be read, and access follows that read. A one-time purchase: a partial refund's
            // notification says no quantity, the purchase says what is still refundable. A subscription: Play voids
            // an order "only when [it needs] to be revoked", and the read says whether the subscription ended —
            // whether or not a SUBSCRIPTION_REVOKED notification follows.
            let finishingVoided: @Sendable (PostgresConnection, GooglePlaySubscriptions.Outcome) async throws -> Void = { connection, _ in
                try await finishing(connection, Outcome.voided.rawValue)
            }
            var readAgain: (@Sendable () async throws -> Void)?
            if productType == 1, let play = subscriptions.play {
                readAgain = { [subscriptions] in _ = try await subscriptions.refresh(token, using: play, cause: cause, also: finishingVoided) }
            } else if productType == 2, let play = products.play {
                readAgain = { [products] in _ = try await products.refresh(token, using: play, cause: cause, also: finishingVoided) }
            }
            if let readAgain {
                _ = try await client.withFencedTransaction(logger: logger) { connection in
                    try await refunds.recordVoided(voided, productType: productType, seenVia: "notification", cause: cause, on: connection)
                }
                return try await readAgain()
            }
            try await client.withFencedTransaction(logger: logger) { connection in
                try await refunds.recordVoided(voided, productType: productType, seenVia: "notification", cause: cause, on: connection)
                try await finishing(connection, Outcome.voided.rawValue)
            }
        case .pendingRefundReview(let reviewToken, let orderId, let reason):
            try await client.withFencedTransaction(logger: logger) { connection in
                let opened = try await refunds.openReview(
                    reviewToken: reviewToken, orderId: orderId, refundReason: reason, messageId: messageId,
                    requestedAt: stored.occurredAt, on: connection)
                try await notifications.markProcessed(messageId, outcome: (opened ? Outcome.reviewOpened : .reviewIgnored).rawValue, on: connection)
                try await execution.complete(on: connection)
            }
        }
    }

    private func finish(_ messageId: String, _ outcome: Outcome, _ execution: JobExecution, filing notification: DeveloperNotification? = nil)
        async throws
    {
        try await client.withFencedTransaction(logger: logger) { connection in
            if let notification { try await notifications.recordToken(notification, messageId: messageId, on: connection) }
            try await notifications.markProcessed(messageId, outcome: outcome.rawValue, on: connection)
            try await execution.complete(on: connection)
        }
    }
}
