import AppStoreModels
import Foundation
import Logging
import PayloadDecoding
import PostgresNIO
import StatementFencing
import Subscriptions

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
    /// `rejectedContent`. `history` is that subscription and its stored events as read under the lock (what an apply
    /// decides on), in the same round trip (`notification_and_history`, sql/0019); `nil` with no lock, for content
    /// refused, and for a notification that is no ``SubscriptionEvent`` (a consumable's).
    public func notificationLockingSubscription(_ uuid: UUID, on connection: PostgresConnection) async throws
        -> (notification: Stored, lockedSubscription: String?, history: SubscriptionHistory.Read?)?
    {
        let rows = try await connection.run(PreparedQuery<NotificationAndHistory>(uuid), logger: logger)
        guard let first = rows.first else { return nil }
        let (decoded, parts, subscription, rejectedReason, locked) = try first.decode((String?, ByteBuffer?, String?, String?, Bool).self)
        let lockedSubscription = locked ? subscription : nil
        if let reason = rejectedReason { return (.rejectedContent(reason: reason), lockedSubscription, nil) }
        guard let notification = try? StoredNotificationFacts.notification(decoded: decoded, parts: parts) else {
            throw PersistenceError(.corruptRecord, "stored notification \(uuid) does not decode")
        }
        if let reason = notification.contentProblem { return (.rejectedContent(reason: reason), lockedSubscription, nil) }
        // A consumable's notification names a transaction, not a subscription: nothing to derive, nothing to decode.
        let history = try lockedSubscription.flatMap { id in
            SubscriptionEvent(notification) == nil ? nil : try SubscriptionHistory.read(rows.dropFirst(), of: id)
        }
        return (.verified(notification), lockedSubscription, history)
    }

    /// Records that a notification was processed and how (`applied`, `recorded`, `rejected_content`, …), with the
    /// reason of a rejection. The first processing's time and outcome stay: its job run again (requeued by an operator)
    /// finds nothing left to change and must not record `unchanged` over them.
    public func markProcessed(_ uuid: UUID, outcome: String, reason: String? = nil, on connection: PostgresConnection) async throws {
        _ = try await connection.run(MarkProcessed(outcome: outcome, reason: reason, uuid: uuid), logger: logger)
    }

    /// Notification `$1` with its subscription's lock taken, then that subscription's history: the notification's
    /// five columns in the first row, ``SubscriptionHistory/SubscriptionAndEvents``' columns in the others.
    enum NotificationAndHistory: PreparedSQL {
        static let sql = """
            SELECT notification_decoded, notification_parts, notification_subscription, notification_rejected,
                coalesce(notification_locked, false), \(SubscriptionHistory.SubscriptionAndEvents.columns)
            FROM notification_and_history($1::uuid)
            """
    }

    struct MarkProcessed: PostgresPreparedStatement {
        typealias Row = ()
        static let sql = """
            UPDATE notifications SET applied_at = coalesce(applied_at, now()),
                apply_outcome = CASE WHEN applied_at IS NULL THEN $1 ELSE apply_outcome END,
                rejected_reason = coalesce($2, rejected_reason)
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
