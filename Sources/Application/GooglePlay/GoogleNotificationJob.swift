import Foundation
import GooglePlay
import Jobs
import Logging
import Persistence
import PostgresNIO

/// Processes a stored Google Play notification. A notification only names the purchase token that changed; this job
/// files the token (`google_purchase_tokens`, what a re-read starts from) and records the outcome on the
/// notification. A test notification from Play Console is recorded as `test`, so an operator setting up the topic
/// sees it arrive.
public struct GoogleNotificationJob: JobHandler {
    public let kind = GoogleInbox.jobKind
    public let timeout: Duration = .seconds(30)
    private let client: PostgresClient
    private let notifications: GoogleNotificationStore
    private let logger: Logger

    public init(client: PostgresClient, logger: Logger) {
        self.client = client
        self.notifications = GoogleNotificationStore(logger: logger)
        self.logger = logger
    }

    /// What processing a notification came to (recorded in `google_notifications.outcome`).
    enum Outcome: String {
        /// The token is filed.
        case recorded
        /// Play Console's test notification.
        case test
    }

    public func run(_ execution: JobExecution) async throws {
        let arguments = try execution.job.decodeArguments(as: GoogleInbox.JobArguments.self)
        try await client.withTransaction(logger: logger) { connection in
            guard let stored = try await notifications.notification(arguments.messageId, on: connection) else {
                throw JobFailure.discard("Google notification \(arguments.messageId) is not stored")
            }
            let outcome: Outcome
            if case .test = stored.notification.content {
                outcome = .test
            } else {
                try await notifications.recordToken(stored.notification, messageId: stored.messageId, on: connection)
                outcome = .recorded
            }
            try await notifications.markProcessed(stored.messageId, outcome: outcome.rawValue, on: connection)
            try await execution.complete(on: connection)
        }
    }
}
