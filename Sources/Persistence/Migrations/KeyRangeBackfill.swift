import Logging
import PostgresNIO

/// A change to the rows written before a migration, made after it in batches of short transactions of their own (row
/// locks only, for a few milliseconds each), walking the table's primary key: a table of millions of rows is changed
/// without its lock held for seconds (docs/operations.md, "Backfills run in batches"). Idempotent; several processes
/// running it at once only repeat each other's work; each batch's last key is kept in `storekeeper_backfill_progress`
/// (sql/0071) as it commits, so a run stopped part way is resumed after it, not from the first key; recorded in
/// `storekeeper_backfills` when done, so later runs cost one read.
struct KeyRangeBackfill: Sendable {
    /// Its row in `storekeeper_backfills`: the migration's file name, without `.sql`.
    let name: String
    /// The table walked and its primary key (a text column), as written in SQL.
    let table: StaticString
    let key: StaticString
    /// Whether the database has what the backfill needs (a directory migrated only part of the way may not).
    let ready: PostgresQuery
    /// The statement that changes the rows with keys in `(after, through]` and answers how many it changed.
    let change: @Sendable (_ after: String, _ through: String) -> PostgresQuery
    let client: PostgresClient
    let logger: Logger
    var batch = 5000

    /// Runs the backfill to its end; returns how many rows it changed. One connection, named as the migration's session
    /// is (`storekeeper migrate`, so docs/operations.md's recipe for a killed `migrate` finds a batch still running) and
    /// free of a role's `statement_timeout`, which would cut a batch of a large table short.
    @discardableResult
    func run() async throws -> Int {
        try await client.withConnection { connection in
            try await MigrationSession.enter(connection, logger: logger)
            do {
                let changed = try await walk(on: connection)
                try await MigrationSession.leave(connection, logger: logger)
                return changed
            } catch {
                try? await MigrationSession.leave(connection, logger: logger)
                guard let message = (error as? PSQLError)?.serverInfo?[.message] else { throw error }
                throw PersistenceError(.migrationFailed, "backfill \(name) stopped (it resumes at the next migrate): \(message)")
            }
        }
    }

    private func walk(on connection: PostgresConnection) async throws -> Int {
        let tables = try await connection.query(
            """
            SELECT to_regclass('storekeeper_backfills') IS NOT NULL, to_regclass('storekeeper_backfill_progress') IS NOT NULL
            """, logger: logger)
        var recordsProgress = false
        for try await (exists, progress) in tables.decode((Bool, Bool).self) {
            guard exists else { return 0 }
            recordsProgress = progress
        }
        for try await isReady in try await connection.query(ready, logger: logger).decode(Bool.self) where !isReady { return 0 }
        let done = try await connection.query("SELECT EXISTS (SELECT 1 FROM storekeeper_backfills WHERE name = \(name))", logger: logger)
        for try await isDone in done.decode(Bool.self) where isDone {
            // Another migrate, paused while this one ran, may have written its progress after the end was recorded.
            if recordsProgress { try await forgetProgress(on: connection) }
            return 0
        }
        // Every key up to the one recorded was walked by the run that recorded it (or by one before it): a run reads
        // it before it starts and records only keys it walked itself from there, keeping the greatest.
        var after = ""
        if recordsProgress {
            let recorded = try await connection.query(
                "SELECT last_key FROM storekeeper_backfill_progress WHERE name = \(name)", logger: logger)
            for try await key in recorded.decode(String.self) { after = key }
            if !after.isEmpty { logger.notice("backfill resumed", metadata: ["backfill": "\(name)", "after": "\(after)"]) }
        }
        var (changed, batches) = (0, 0)
        while true {
            // The next batch's last key: an index range of the primary key.
            var last: String?
            for try await key in try await connection.query(
                PostgresQuery(
                    unsafeSQL: """
                        SELECT max(\(key)) FROM (SELECT \(key) FROM \(self.table) WHERE \(key) > $1 ORDER BY \(key) LIMIT $2) AS keys
                        """, binds: try Self.binds(after, batch)), logger: logger
            ).decode(String?.self) { last = key }
            guard let last else { break }
            if batches == 0, after.isEmpty { logger.notice("backfill running", metadata: ["backfill": "\(name)"]) }
            batches += 1
            for try await count in try await connection.query(change(after, last), logger: logger).decode(Int.self) { changed += count }
            after = last
            if recordsProgress {
                // Not once the end is recorded (by another migrate): the row would stay behind it.
                try await connection.query(
                    """
                    INSERT INTO storekeeper_backfill_progress AS progress (name, last_key, updated_at)
                    SELECT \(name), \(last), now() WHERE NOT EXISTS (SELECT 1 FROM storekeeper_backfills WHERE name = \(name))
                    ON CONFLICT (name) DO UPDATE SET last_key = greatest(progress.last_key, EXCLUDED.last_key), updated_at = now()
                    """, logger: logger)
            }
        }
        try await connection.query(
            "INSERT INTO storekeeper_backfills (name, done_at) VALUES (\(name), now()) ON CONFLICT (name) DO NOTHING", logger: logger)
        if recordsProgress { try await forgetProgress(on: connection) }
        // Said when it walked something: a new install's empty tables say nothing.
        if batches > 0 { logger.notice("backfill done", metadata: ["backfill": "\(name)", "rows": "\(changed)"]) }
        return changed
    }

    private func forgetProgress(on connection: PostgresConnection) async throws {
        try await connection.query("DELETE FROM storekeeper_backfill_progress WHERE name = \(name)", logger: logger)
    }

    private static func binds(_ after: String, _ batch: Int) throws -> PostgresBindings {
        var binds = PostgresBindings()
        binds.append(after)
        binds.append(batch)
        return binds
    }
}

extension KeyRangeBackfill {
    /// `subscriptions.store` for the rows written before sql/0033, by the rule they were written under.
    static func subscriptionStores(client: PostgresClient, logger: Logger) -> KeyRangeBackfill {
        KeyRangeBackfill(
            name: "0033_subscription_store", table: "subscriptions", key: "original_transaction_id", ready: "SELECT true",
            change: { after, through in
                """
                WITH filled AS (
                    UPDATE subscriptions SET store = subscription_store_before_0033(original_transaction_id)
                    WHERE original_transaction_id > \(after) AND original_transaction_id <= \(through) AND store IS NULL
                    RETURNING 1)
                SELECT count(*)::int FROM filled
                """
            }, client: client, logger: logger)
    }

    /// The Stripe events stored before sql/0070 that hold nothing of Storekeeper's, reduced to their envelope.
    static func stripeEventEnvelopes(client: PostgresClient, logger: Logger) -> KeyRangeBackfill {
        KeyRangeBackfill(
            name: "0070_stripe_event_envelopes", table: "stripe_events", key: "id",
            ready: "SELECT to_regprocedure('stripe_event_body_kept(boolean,text)') IS NOT NULL",
            change: { after, through in
                """
                WITH reduced AS (
                    UPDATE stripe_events SET body = envelope
                    FROM (SELECT id AS event, stripe_event_envelope(id, type, livemode, created_at, object_id, object_type) AS envelope
                          FROM stripe_events
                          WHERE id > \(after) AND id <= \(through) AND NOT stripe_event_body_kept(ignored, outcome)) AS reduced
                    WHERE stripe_events.id = reduced.event AND stripe_events.body <> reduced.envelope
                    RETURNING 1)
                SELECT count(*)::int FROM reduced
                """
            }, client: client, logger: logger)
    }
}
