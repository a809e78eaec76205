import AppStoreModels
import Foundation
import Jobs
import Logging
import Persistence
import PostgresNIO
import Subscriptions

/// Applies one stored notification to its subscription: loads it, runs the lifecycle rules against the locked
/// subscription row, saves the result, records the outcome, and completes the job — all in one transaction.
/// Notifications without a transaction (TEST, summaries, …) are recorded and complete without error.
public struct ApplyNotificationJob: JobHandler {
    public let kind = NotificationInbox.applyJobKind
    private let client: PostgresClient
    private let notifications: NotificationStore
    private let subscriptions: SubscriptionStore
    private let clock: @Sendable () -> Date
    private let logger: Logger

    public init(client: PostgresClient, clock: @escaping @Sendable () -> Date = { Date() }, logger: Logger) {
        self.client = client
        self.notifications = NotificationStore(logger: logger)
        self.subscriptions = SubscriptionStore(client: client, logger: logger)
        self.clock = clock
        self.logger = logger
    }

    public func run(_ execution: JobExecution) async throws {
        let arguments = try execution.job.decodeArguments(as: NotificationInbox.ApplyArguments.self)
        let uuid = arguments.notificationUUID
        try await client.withTransaction(logger: logger) { connection in
            guard let notification = try await notifications.notification(uuid, on: connection) else {
                throw JobFailure.discard("notification \(uuid) is not stored")
            }
            let outcome: String
            if let event = SubscriptionEvent(notification) {
                let current = try await subscriptions.lockedSubscription(event.transaction.originalTransactionId, on: connection)
                let decision = Lifecycle.apply(event, to: current, now: clock())
                if decision.state != current { try await subscriptions.save(decision.state, on: connection) }
                outcome = decision.applied ? "applied" : "stale"
            } else {
                outcome = "recorded"
            }
            try await notifications.markProcessed(uuid, outcome: outcome, on: connection)
            try await execution.complete(on: connection)
            logger.debug(
                "notification processed",
                metadata: [
                    "notification.uuid": "\(uuid)", "notification.outcome": "\(outcome)",
                    "subscription.id": "\(notification.originalTransactionId ?? "-")",
                ])
        }
    }
}
