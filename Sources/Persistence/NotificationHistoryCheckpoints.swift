import Entitlements
import Foundation
import Logging
import PostgresNIO

/// How far the periodic Notification History catch-up has read, per environment.
public struct NotificationHistoryCheckpoints: Sendable {
    private let client: PostgresClient
    private let logger: Logger

    public init(client: PostgresClient, logger: Logger) {
        self.client = client
        self.logger = logger
    }

    /// The instant read up to, or nil before the first catch-up.
    public func readUntil(environment: StoreEnvironment) async throws -> Date? {
        let rows = try await client.fencedQuery(
            "SELECT read_until FROM notification_history_checkpoints WHERE environment = \(environment)", logger: logger)
        for try await date in rows.decode(Date.self) { return date }
        return nil
    }

    /// Moves the checkpoint forward (never back).
    public func advance(environment: StoreEnvironment, to date: Date) async throws {
        try await client.fencedQuery(
            """
            INSERT INTO notification_history_checkpoints (environment, read_until) VALUES (\(environment), \(date))
            ON CONFLICT (environment) DO UPDATE SET read_until = greatest(notification_history_checkpoints.read_until, EXCLUDED.read_until),
                updated_at = now()
            """,
            logger: logger)
    }
}
