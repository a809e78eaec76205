import AppStoreModels
import Foundation
import Logging
import PayloadDecoding
import PostgresNIO

/// Reads stored notifications and records how they were applied.
public struct NotificationStore: Sendable {
    private let logger: Logger

    public init(logger: Logger) { self.logger = logger }

    /// The verified notification stored under `uuid`, read in the statement that also locks its subscription (see
    /// ``SubscriptionStore/lockedSubscription(_:on:lockHeld:)``) for the rest of the caller's transaction:
    /// `lockedSubscription` is the `originalTransactionId` locked, `nil` when the notification names none.
    public func notificationLockingSubscription(_ uuid: UUID, on connection: PostgresConnection) async throws
        -> (notification: VerifiedNotification, lockedSubscription: String?)?
    {
        guard let row = try await connection.run(StoredNotification(uuid: uuid), logger: logger).first else { return nil }
        guard let notification = try? PayloadDecoder().decode(VerifiedNotification.self, from: Array(row.decoded.utf8)) else {
            throw PersistenceError(.corruptRecord, "stored notification \(uuid) does not decode")
        }
        return (notification, row.lockedSubscription)
    }

    /// Records that a notification was processed and how (`applied`, `stale`, `recorded`).
    public func markProcessed(_ uuid: UUID, outcome: String, on connection: PostgresConnection) async throws {
        _ = try await connection.run(MarkProcessed(outcome: outcome, uuid: uuid), logger: logger)
    }

    /// The verified copy of one notification, taking its subscription's lock; prepared, as every apply reads one.
    struct StoredNotification: PostgresPreparedStatement {
        static let sql = """
            SELECT decoded::text, original_transaction_id,
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

        func decodeRow(_ row: PostgresRow) throws -> (decoded: String, lockedSubscription: String?) {
            let (decoded, subscription, locked) = try row.decode((String, String?, Bool).self)
            return (decoded, locked ? subscription : nil)
        }
    }

    struct MarkProcessed: PostgresPreparedStatement {
        typealias Row = ()
        static let sql = "UPDATE notifications SET applied_at = now(), apply_outcome = $1 WHERE notification_uuid = $2"
        static let bindingDataTypes: [PostgresDataType] = [.text, .uuid]
        var outcome: String
        var uuid: UUID

        func makeBindings() -> PostgresBindings {
            var bindings = PostgresBindings(capacity: 2)
            bindings.append(outcome)
            bindings.append(uuid)
            return bindings
        }

        func decodeRow(_ row: PostgresRow) throws {}
    }
}
