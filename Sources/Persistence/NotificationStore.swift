import AppStoreModels
import Foundation
import Logging
import PostgresNIO

/// Reads stored notifications and records how they were applied.
public struct NotificationStore: Sendable {
    private let logger: Logger

    public init(logger: Logger) { self.logger = logger }

    /// The verified notification stored under `uuid`.
    public func notification(_ uuid: UUID, on connection: PostgresConnection) async throws -> VerifiedNotification? {
        let rows = try await connection.query(
            "SELECT decoded::text FROM notifications WHERE notification_uuid = \(uuid)", logger: logger)
        for try await text in rows.decode(String.self) {
            guard let notification = try? JSONDecoder().decode(VerifiedNotification.self, from: Data(text.utf8)) else {
                throw PersistenceError(.corruptRecord, "stored notification \(uuid) does not decode")
            }
            return notification
        }
        return nil
    }

    /// Records that a notification was processed and how (`applied`, `stale`, `recorded`).
    public func markProcessed(_ uuid: UUID, outcome: String, on connection: PostgresConnection) async throws {
        try await connection.query(
            "UPDATE notifications SET applied_at = now(), apply_outcome = \(outcome) WHERE notification_uuid = \(uuid)",
            logger: logger
        )
    }
}
