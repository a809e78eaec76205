import AppStoreModels
import Foundation
import Jobs
import Logging
import Persistence
import PostgresNIO
import Subscriptions

/// Applies one stored notification to its subscription through ``SubscriptionWriter`` (lock, lifecycle rules, replay
/// when it arrived out of order, save, archive), records the outcome and completes the job — all in one
/// transaction. Notifications that are not about an auto-renewable subscription (TEST, summaries, consumables, types
/// Apple adds later, …) are recorded and complete without error.
public struct ApplyNotificationJob: JobHandler {
    public let kind = NotificationInbox.applyJobKind
    private let client: PostgresClient
    private let notifications: NotificationStore
    private let writer: SubscriptionWriter
    private let clock: @Sendable () -> Date
    private let logger: Logger

    public init(client: PostgresClient, clock: @escaping @Sendable () -> Date = { Date() }, logger: Logger) {
        self.client = client
        self.notifications = NotificationStore(logger: logger)
        self.writer = SubscriptionWriter(client: client, logger: logger)
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
                outcome = try await writer.apply(event, now: clock(), on: connection).outcome.rawValue
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
