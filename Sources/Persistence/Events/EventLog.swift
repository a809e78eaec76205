import Entitlements
import Events
import Foundation
import Logging
import PostgresNIO
import StatementFencing
import Subscriptions

/// The stored events (`events`), read and written on the caller's connection: appended in the transaction of the
/// change they describe, read by the feed, the operators' commands and the webhook deliveries.
public struct EventLog: Sendable {
    let logger: Logger

    public init(logger: Logger) { self.logger = logger }

    /// One stored event.
    public struct StoredEvent: Sendable, Equatable {
        public var id: UUID
        public var sequence: Int64
        /// The writing transaction's id: with `sequence`, the feed's cursor.
        public var transaction: Int64
        public var type: String
        public var account: String
        public var subscription: String?
        public var environment: StoreEnvironment
        public var createdAt: Date
        /// The `data` object consumers receive (docs/events.md).
        public var body: String

        public var cursor: EventCursor { EventCursor(transaction: transaction, sequence: sequence) }
    }

    /// An event as its append returns it: what its webhook deliveries are made of.
    public struct Appended: Sendable, Equatable {
        public var key: String
        public var id: UUID
        public var account: String
        public var sequence: Int64
    }

    /// Appends those of `entries` whose keys are not stored yet, in their order, in one statement; returns the
    /// appended ones in that order.
    public func append(_ entries: [(draft: EventDraft, body: String)], at now: Date, on connection: PostgresConnection) async throws
        -> [Appended]
    {
        guard !entries.isEmpty else { return [] }
        let values = try Self.bindings(of: entries.map { (draft: $0.draft, body: $0.body, createdAt: now) })
        return try Self.appended(try await connection.run(PreparedQuery<AppendEvents>(binding: values), logger: logger))
    }

    /// Appends `entries` as ``append(_:at:on:)`` does, each created at its own time, in the statement that also
    /// records how the apply jobs of one transaction processed their notifications and completes their jobs
    /// (`processed`, in their order): the applies' last write, one round trip for all of them. `jobsCompleted` answers
    /// each of `processed` in order, false where its job no longer ran under the claimed attempt.
    public func append(
        _ entries: [(draft: EventDraft, body: String, createdAt: Date)], markingProcessed processed: [NotificationStore.Processed],
        on connection: PostgresConnection
    ) async throws -> (events: [Appended], jobsCompleted: [Bool]) {
        let values = try Self.bindings(of: entries) + NotificationStore.Processed.arrays(of: processed)
        let rows = try await connection.run(PreparedQuery<AppendEventsMarkingProcessed>(binding: values), logger: logger)
        // No job (events stored ahead of their applies' last write): array_agg of no row is NULL.
        let completed = try rows.first?.makeRandomAccess()["jobs_completed"].decode([Bool]?.self) ?? []
        return (try Self.appended(rows), completed)
    }

    /// `$1` … `$7` of ``AppendEvents``.
    private static func bindings(of entries: [(draft: EventDraft, body: String, createdAt: Date)]) throws -> [(any PostgresEncodable)?] {
        let drafts = entries.map(\.draft)
        return [
            entries.map(\.createdAt), drafts.map(\.key), drafts.map(\.type.rawValue), drafts.map(\.account.text),
            drafts.map { $0.subscription ?? "" }, drafts.map(\.environment.rawValue),
            try entries.map { try CompressedColumn.compress($0.body.utf8) },
        ]
    }

    /// The appended events of rows that begin with ``AppendEvents``' returned columns (NULL in a row that holds
    /// none), in the order they were appended.
    private static func appended(_ rows: [PostgresRow]) throws -> [Appended] {
        var appended: [Appended] = []
        for row in rows {
            let (key, id, account, sequence) = try row.decode((String?, UUID?, String?, Int64?).self)
            guard let key, let id, let account, let sequence else { continue }
            appended.append(Appended(key: key, id: id, account: account, sequence: sequence))
        }
        return appended.sorted { $0.sequence < $1.sequence }
    }

    /// Appends events from the parallel arrays `$1`… (created at, key, type, account, subscription or '', environment,
    /// compressed body), in their order, unless their keys are stored (a key twice in the arrays: the first); returns
    /// each appended event's key, id, account and sequence.
    enum AppendEvents: PreparedSQL {
        static let sql = """
            INSERT INTO events (dedup_key, type, account_id, subscription_id, environment, created_at, body_deflated)
            SELECT key, type, account, NULLIF(subscription, ''), environment, created, body
            FROM unnest($1::timestamptz[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::bytea[])
                WITH ORDINALITY AS appended (created, key, type, account, subscription, environment, body, position)
            ORDER BY position
            ON CONFLICT (dedup_key) DO NOTHING
            RETURNING events.dedup_key, events.id, events.account_id, events.sequence
            """
    }

    /// ``AppendEvents`` (`$1` … `$7`), then the notifications' processing and their jobs' completion
    /// (``NotificationStore/recordingProcessed(boundFrom:)``'s arrays from `$8`): one row per appended event, or one
    /// of NULLs when none was, each with the completions' answers last (`jobs_completed`, in the jobs' order).
    enum AppendEventsMarkingProcessed: PreparedSQL {
        static let sql: String = {
            let recording = NotificationStore.recordingProcessed(boundFrom: 8)
            return """
                WITH appended AS (\(AppendEvents.sql)),
                marked AS (\(recording.update))
                SELECT appended.dedup_key, appended.id, appended.account_id, appended.sequence, completed.jobs_completed
                FROM (SELECT \(recording.completions) AS jobs_completed) AS completed LEFT JOIN appended ON true
                """
        }()
    }

    /// Events after `cursor` in commit order, only from transactions older than every one still running (so a later
    /// read never finds one before the cursor), of `types` when given.
    public func feed(after cursor: EventCursor?, types: [String]?, limit: Int, on connection: PostgresConnection) async throws -> [StoredEvent] {
        let cursor = cursor ?? EventCursor(transaction: 0, sequence: 0)
        let rows = try await connection.query(
            """
            SELECT \(unescaped: Self.columns) FROM events
            WHERE (transaction_id, sequence) > (\(String(cursor.transaction))::xid8, \(cursor.sequence))
              AND transaction_id < pg_snapshot_xmin(pg_current_snapshot())
              AND (\(types)::text[] IS NULL OR type = ANY(\(types)::text[]))
            ORDER BY transaction_id, sequence LIMIT \(limit)
            """, logger: logger)
        return try await Self.decodeAll(rows)
    }

    /// The newest events first, of one account and of `types` when given.
    public func recent(account: AccountID?, types: [String]? = nil, limit: Int, on connection: PostgresConnection) async throws -> [StoredEvent] {
        let rows = try await connection.query(
            """
            SELECT \(unescaped: Self.columns) FROM events
            WHERE (\(account)::text IS NULL OR account_id = \(account)::text)
              AND (\(types)::text[] IS NULL OR type = ANY(\(types)::text[]))
            ORDER BY sequence DESC LIMIT \(limit)
            """, logger: logger)
        return try await Self.decodeAll(rows)
    }

    public func event(_ id: UUID, on connection: PostgresConnection) async throws -> StoredEvent? {
        let rows = try await connection.query("SELECT \(unescaped: Self.columns) FROM events WHERE id = \(id)", logger: logger)
        return try await Self.decodeAll(rows).first
    }

    /// Deletes up to `limit` of the events created before `cutoff`, the oldest first (`events_created`), with their
    /// deliveries and attempts; returns how many went. A batch at a time, as the idempotency window deletes: a backlog
    /// (the first run after an upgrade, a retention shortened) goes in short transactions, not in one statement over a
    /// year of events and their logs. Events another transaction holds (recording a delivery attempt, an erasure) are
    /// skipped, not waited for.
    public func deleteEvents(before cutoff: Date, limit: Int, on connection: PostgresConnection) async throws -> Int {
        let rows = try await connection.query(
            """
            WITH gone AS (
                DELETE FROM events WHERE ctid = ANY(ARRAY(
                    SELECT ctid FROM events WHERE created_at < \(cutoff) ORDER BY created_at LIMIT \(limit) FOR UPDATE SKIP LOCKED))
                RETURNING 1
            )
            SELECT count(*)::int FROM gone
            """, logger: logger)
        for try await count in rows.decode(Int.self) { return count }
        return 0
    }

    static let columns = columns(of: "events")

    /// The columns ``decode(_:)`` reads, of the table or alias `table`.
    static func columns(of table: String) -> String {
        columnNames.map { "\(table).\($0)" }.joined(separator: ", ")
    }

    /// How many columns ``columns(of:)`` selects: a query's own columns follow them.
    static var columnCount: Int { columnNames.count }

    private static let columnNames = [
        "id", "sequence", "transaction_id::text::bigint", "type", "account_id", "subscription_id", "environment", "created_at", "body::text",
        "body_deflated",
    ]

    static func decode(_ row: PostgresRow) throws -> StoredEvent {
        let (id, sequence, transaction, type, account, subscription, environment, createdAt, text, deflated) = try row.decode(
            (UUID, Int64, Int64, String, String, String?, StoreEnvironment, Date, String?, ByteBuffer?).self)
        // Events stored before 0013 have a jsonb body; since, it is the JSON text, compressed.
        guard let body = try text ?? deflated.map({ String(buffer: try CompressedColumn.decompress($0)) }) else {
            throw PersistenceError(.corruptRecord, "event \(id) has no body")
        }
        return StoredEvent(
            id: id, sequence: sequence, transaction: transaction, type: type, account: account, subscription: subscription,
            environment: environment, createdAt: createdAt, body: body)
    }

    static func decodeAll(_ rows: some AsyncSequence<PostgresRow, any Error>) async throws -> [StoredEvent] {
        var events: [StoredEvent] = []
        for try await row in rows { events.append(try decode(row)) }
        return events
    }
}

/// A position in the feed: the writing transaction and the sequence, as `<transaction>-<sequence>`.
public struct EventCursor: Sendable, Equatable, CustomStringConvertible {
    public var transaction: Int64
    public var sequence: Int64

    public init(transaction: Int64, sequence: Int64) {
        self.transaction = transaction
        self.sequence = sequence
    }

    /// Parses `<transaction>-<sequence>`; `nil` when malformed.
    public init?(_ text: String) {
        let parts = text.split(separator: "-", omittingEmptySubsequences: false)
        guard parts.count == 2, let transaction = Int64(parts[0]), let sequence = Int64(parts[1]), transaction >= 0, sequence >= 0
        else { return nil }
        self.init(transaction: transaction, sequence: sequence)
    }

    public var description: String { "\(transaction)-\(sequence)" }
}
