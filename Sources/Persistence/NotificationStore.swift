import AppStoreModels
import Foundation
import Logging
import PayloadDecoding
import PostgresNIO
import StatementFencing

/// Reads stored notifications and records how they were applied.
public struct NotificationStore: Sendable {
    private let logger: Logger

    public init(logger: Logger) { self.logger = logger }

    /// A stored notification as a worker reads it.
    public enum Stored: Sendable {
        /// Its verified content, within ``ContentLimits``.
        case verified(VerifiedNotification)
        /// Authentic, but its content is outside ``ContentLimits`` for this reason: it is recorded, not applied.
        case rejectedContent(reason: String)
    }

    /// The notification stored under `uuid`, read in the statement that also locks its subscription (see
    /// ``SubscriptionStore/lockedSubscription(_:on:lockHeld:)``) for the rest of the caller's transaction:
    /// `lockedSubscription` is the `originalTransactionId` locked, `nil` when the notification names none. Content
    /// outside ``ContentLimits`` — found at the intake, or now in a row stored before the intake looked — is
    /// `rejectedContent`.
    public func notificationLockingSubscription(_ uuid: UUID, on connection: PostgresConnection) async throws
        -> (notification: Stored, lockedSubscription: String?)?
    {
        guard let row = try await connection.run(StoredNotification(uuid: uuid), logger: logger).first else { return nil }
        if let reason = row.rejectedReason { return (.rejectedContent(reason: reason), row.lockedSubscription) }
        guard let notification = try? StoredNotificationFacts.notification(decoded: row.decoded, parts: row.parts) else {
            throw PersistenceError(.corruptRecord, "stored notification \(uuid) does not decode")
        }
        if let reason = notification.contentProblem { return (.rejectedContent(reason: reason), row.lockedSubscription) }
        return (.verified(notification), row.lockedSubscription)
    }

    /// Records that a notification was processed and how (`applied`, `recorded`, `rejected_content`, …), with the
    /// reason of a rejection.
    public func markProcessed(_ uuid: UUID, outcome: String, reason: String? = nil, on connection: PostgresConnection) async throws {
        _ = try await connection.run(MarkProcessed(outcome: outcome, reason: reason, uuid: uuid), logger: logger)
    }

    /// The verified copy of one notification, taking its subscription's lock; prepared, as every apply reads one.
    struct StoredNotification: PostgresPreparedStatement {
        static let sql = """
            SELECT decoded::text, signed_parts, original_transaction_id, rejected_reason,
                \(SubscriptionStore.lockSQL(subscription: "original_transaction_id")) IS NOT NULL
            FROM notifications WHERE notification_uuid = $1
            """
        static let bindingDataTypes: [PostgresDataType] = [.uuid]
        var uuid: UUID

        func makeBindings() -> PostgresBindings {
            var bindings = PostgresBindings(capacity: 1)
            bindings.append(uuid)
            return bindings
        }

        func decodeRow(_ row: PostgresRow) throws
            -> (decoded: String?, parts: ByteBuffer?, rejectedReason: String?, lockedSubscription: String?)
        {
            let (decoded, parts, subscription, rejectedReason, locked) = try row.decode((String?, ByteBuffer?, String?, String?, Bool).self)
            return (decoded, parts, rejectedReason, locked ? subscription : nil)
        }
    }

    struct MarkProcessed: PostgresPreparedStatement {
        typealias Row = ()
        static let sql = """
            UPDATE notifications SET applied_at = now(), apply_outcome = $1, rejected_reason = coalesce($2, rejected_reason)
            WHERE notification_uuid = $3
            """
        static let bindingDataTypes: [PostgresDataType] = [.text, .text, .uuid]
        var outcome: String
        var reason: String?
        var uuid: UUID

        func makeBindings() -> PostgresBindings {
            var bindings = PostgresBindings(capacity: 3)
            bindings.append(outcome)
            bindings.append(reason)
            bindings.append(uuid)
            return bindings
        }

        func decodeRow(_ row: PostgresRow) throws {}
    }
}
