import Foundation
import Logging
import PostgresNIO
import StorekeeperRuntime

/// Waits until an intake's table holds `count` processed rows received since `since`, none waiting; the rate from
/// the database's own times (first received to last processed). Used by the store benchmarks (`stripe`, `play`).
func waitUntilProcessed(
    _ count: Int, in table: IntakeTable, since: Date, databaseURL: DatabaseURL, logger: Logger
) async throws -> Double {
    try await PostgresClient.withRunning(databaseURL.clientConfiguration(maximumConnections: 1), logger: logger) { client in
        let deadline = ContinuousClock.now + .seconds(600)
        while ContinuousClock.now < deadline {
            let rows = try await client.query(
                """
                SELECT count(*) FILTER (WHERE processed_at IS NOT NULL)::bigint, count(*)::bigint,
                    coalesce(extract(epoch FROM max(processed_at) - min(received_at)), 0)::float8
                FROM \(unescaped: table.rawValue) WHERE received_at >= \(since)
                """, logger: logger)
            for try await (processed, total, seconds) in rows.decode((Int64, Int64, Double).self) where processed >= count && processed == total {
                return seconds > 0 ? Double(processed) / seconds : 0
            }
            try await Task.sleep(for: .milliseconds(200))
        }
        throw CommandFailure("\(table.rawValue): not all processed within 600 s")
    }
}

/// The tables an intake stores into, with `received_at` and `processed_at`.
enum IntakeTable: String {
    case stripeEvents = "stripe_events"
    case googleNotifications = "google_notifications"
}
