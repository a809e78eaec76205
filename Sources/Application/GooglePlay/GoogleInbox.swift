import Foundation
import GooglePlay
import Jobs
import Logging
import Persistence
import PostgresNIO

/// Accepts a verified Google Play notification: stores it and enqueues its processing in one committed transaction
/// — a 2xx is only ever answered after it — deduplicated by Pub/Sub's message id. A notification about another app
/// (`STOREKEEPER_GOOGLE_PACKAGE_NAME` names ours) is acknowledged and neither stored nor processed: the topic may be
/// shared, and Pub/Sub would otherwise send it again and again.
public struct GoogleInbox: Sendable {
    /// What accepting a notification did.
    public enum Outcome: String, Sendable {
        case accepted
        case duplicate
        case ignored
    }

    /// Job kind of processing a Google Play notification.
    public static let jobKind = "google-notification"

    public struct JobArguments: Codable, Sendable {
        public var messageId: String
    }

    private let client: PostgresClient
    private let queue: any JobScheduling
    private let notifications: GoogleNotificationStore
    /// `STOREKEEPER_GOOGLE_PACKAGE_NAME`.
    public let packageName: String
    private let logger: Logger

    public init(client: PostgresClient, queue: any JobScheduling, packageName: String, logger: Logger) {
        self.client = client
        self.queue = queue
        self.notifications = GoogleNotificationStore(logger: logger)
        self.packageName = packageName
        self.logger = logger
    }

    public func accept(_ push: PubSubPush, notification: DeveloperNotification) async throws -> Outcome {
        guard notification.packageName == packageName else { return .ignored }
        return try await client.withFencedTransaction(logger: logger) { connection in
            guard try await notifications.insert(push, notification: notification, on: connection) else { return .duplicate }
            let job = try NewJob(
                kind: Self.jobKind, arguments: JobArguments(messageId: push.messageId), uniqueKey: "google-notification:\(push.messageId)",
                concurrencyKey: notification.purchaseToken.map { "google:\($0)" })
            try await queue.enqueue(job, on: connection)
            return .accepted
        }
    }
}
