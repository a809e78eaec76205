import Logging
import PostgresNIO

/// Fills in `subscriptions.store` for the rows written before sql/0033, in batches of short transactions of their own
/// (row locks only, for a few milliseconds each), walking the primary key — so a database of millions of subscriptions
/// migrates without the table's exclusive lock held for seconds. Idempotent; several processes running it at once only
/// repeat each other's work; recorded in `storekeeper_backfills` when done, so later runs cost one read.
struct SubscriptionStoreBackfill: Sendable {
    static let name = "0033_subscription_store"
    let client: PostgresClient
    let logger: Logger
    var batch = 5000

    /// Runs the backfill to its end; returns how many rows it filled in.
    @discardableResult
    func run() async throws -> Int {
        // A database migrated only part of the way (a directory without sql/0033) has nothing to fill in yet.
        let table = try await client.query("SELECT to_regclass('storekeeper_backfills') IS NOT NULL", logger: logger)
        for try await exists in table.decode(Bool.self) where !exists { return 0 }
        let done = try await client.query("SELECT EXISTS (SELECT 1 FROM storekeeper_backfills WHERE name = \(Self.name))", logger: logger)
        for try await isDone in done.decode(Bool.self) where isDone { return 0 }
        var after = ""
        var filled = 0
        while true {
            // The next batch's last key, then the rows up to it that have no store: an index range of the primary key.
            var last: String?
            for try await key in try await client.query(
                """
                SELECT max(original_transaction_id) FROM (
                    SELECT original_transaction_id FROM subscriptions WHERE original_transaction_id > \(after)
                    ORDER BY original_transaction_id LIMIT \(batch)) AS keys
                """, logger: logger
            ).decode(String?.self) { last = key }
            guard let last else { break }
            for try await count in try await client.query(
                """
                WITH filled AS (
                    UPDATE subscriptions SET store = subscription_store_before_0033(original_transaction_id)
                    WHERE original_transaction_id > \(after) AND original_transaction_id <= \(last) AND store IS NULL
                    RETURNING 1)
                SELECT count(*)::int FROM filled
                """, logger: logger
            ).decode(Int.self) { filled += count }
            after = last
        }
        try await client.query(
            "INSERT INTO storekeeper_backfills (name, done_at) VALUES (\(Self.name), now()) ON CONFLICT (name) DO NOTHING", logger: logger)
        if filled > 0 { logger.notice("subscriptions' stores filled in", metadata: ["rows": "\(filled)"]) }
        return filled
    }
}
