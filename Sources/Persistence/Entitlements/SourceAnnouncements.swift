import Events
import Foundation
import Logging
import PostgresNIO

/// What the app's services were last told of each grant and one-time purchase (sql/0069), so that their events follow
/// what changed and not what the event store still remembers (it forgets after the retention window).
public struct SourceAnnouncements: Sendable {
    let logger: Logger

    public init(logger: Logger) { self.logger = logger }

    /// Records `announcement` for `source` and returns what was recorded before (`nil`: nothing, a source settled
    /// before sql/0069 or never). Runs on the settlement's transaction, under the account's lock.
    public func exchange(_ source: String, for announcement: SourceAnnouncement, at now: Date, on connection: PostgresConnection) async throws
        -> SourceAnnouncement?
    {
        let rows = try await connection.query(
            """
            WITH before AS (SELECT announced FROM source_announcements WHERE source_id = \(source)),
            recorded AS (
                INSERT INTO source_announcements (source_id, announced, announced_at) VALUES (\(source), \(announcement.rawValue), \(now))
                ON CONFLICT (source_id) DO UPDATE SET announced = excluded.announced, announced_at = excluded.announced_at
                WHERE source_announcements.announced <> excluded.announced
            )
            SELECT announced FROM before
            """, logger: logger)
        for try await text in rows.decode(String.self) { return SourceAnnouncement(rawValue: text) }
        return nil
    }
}
