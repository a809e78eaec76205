import AppStoreModels
import Foundation
import Jobs
import Logging
import PostgresNIO

/// The durable intake: stores a verified notification and enqueues the job that applies it, in one transaction.
/// A notification already stored (Apple retries with the same `notificationUUID`) is reported as a duplicate and
/// enqueues nothing.
public struct NotificationInbox: Sendable {
    /// Job kind of the job that applies a stored notification.
    public static let applyJobKind = "apply-notification"

    /// Arguments of the apply job.
    public struct ApplyArguments: Codable, Sendable {
        public var notificationUUID: UUID
        public init(notificationUUID: UUID) { self.notificationUUID = notificationUUID }
    }

    public enum Outcome: Sendable, Equatable {
        case accepted
        case duplicate
    }

    private let client: PostgresClient
    private let queue: PostgresJobQueue
    private let notifier: WorkerNotifier
    private let logger: Logger

    /// - Parameter notifier: wakes workers after each commit (shared by all requests of a process).
    public init(client: PostgresClient, queue: PostgresJobQueue, notifier: WorkerNotifier, logger: Logger) {
        self.client = client
        self.queue = queue
        self.notifier = notifier
        self.logger = logger
    }

    /// Stores `notification` (with the raw `signedPayload` it was verified from) and enqueues its apply job.
    public func accept(
        _ notification: VerifiedNotification, uuid: UUID, signedPayload: String
    ) async throws -> Outcome {
        // The decoded copy leaves out the nested JWS strings: they are in `signed_payload` already, verbatim.
        var stored = notification
        stored.payload.data?.signedTransactionInfo = nil
        stored.payload.data?.signedRenewalInfo = nil
        stored.payload.appData?.signedAppTransactionInfo = nil
        let decoded = String(decoding: try JSONEncoder().encode(stored), as: UTF8.self)
        let payload = notification.payload
        let subscription = notification.originalTransactionId
        let job = try NewJob(
            kind: Self.applyJobKind, arguments: ApplyArguments(notificationUUID: uuid), maxAttempts: 25,
            uniqueKey: "apply:\(uuid)", concurrencyKey: subscription.map { "subscription:\($0)" }
        )
        let outcome = try await client.withTransaction(logger: logger) { connection -> Outcome in
            let rows = try await connection.query(
                """
                INSERT INTO notifications (notification_uuid, notification_type, subtype, environment,
                    original_transaction_id, signed_date, signed_payload, decoded)
                VALUES (\(uuid), \(payload.notificationType), \(payload.subtype),
                    \(payload.claimedIdentity?.environment?.rawValue), \(subscription), \(payload.signedDate ?? 0),
                    \(signedPayload), \(decoded)::jsonb)
                ON CONFLICT (notification_uuid) DO NOTHING
                RETURNING notification_uuid
                """,
                logger: logger
            )
            var inserted = false
            for try await _ in rows.decode(UUID.self) { inserted = true }
            guard inserted else { return .duplicate }
            try await queue.enqueue(job, on: connection, notify: false)
            return .accepted
        }
        if outcome == .accepted { notifier.signal() }
        return outcome
    }
}
