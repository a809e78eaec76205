import Logging
import PostgresNIO

/// How far `storekeeper dev`'s clock is ahead of the real time (`dev_clock`, sql/0045), kept in the database whose
/// facts it dated, so a restarted dev server resumes there.
public struct DevClockOffset: Sendable {
    let client: PostgresClient
    let logger: Logger

    public init(client: PostgresClient, logger: Logger) {
        self.client = client
        self.logger = logger
    }

    /// The stored offset in milliseconds; 0 for a database the dev clock never moved.
    public func stored() async throws -> Int64 {
        let rows = try await client.fencedQuery("SELECT offset_milliseconds FROM dev_clock", logger: logger)
        for try await offset in rows.decode(Int64.self) { return offset }
        return 0
    }

    /// Records `milliseconds`; an offset smaller than the one stored (two advances answered out of order) leaves it.
    public func record(_ milliseconds: Int64) async throws {
        try await client.fencedQuery(
            """
            INSERT INTO dev_clock (offset_milliseconds) VALUES (\(milliseconds))
            ON CONFLICT (only_row) DO UPDATE SET offset_milliseconds = GREATEST(dev_clock.offset_milliseconds, EXCLUDED.offset_milliseconds),
                updated_at = now()
            """, logger: logger)
    }
}
