import Credits
import Entitlements
import Foundation
import Logging
import PostgresNIO
import StatementFencing
import Subscriptions

/// Grants and one-time purchases (`entitlement_sources`, sql/0022), on the caller's connection: one statement per
/// intent.
public struct EntitlementSources: Sendable {
    let logger: Logger

    public init(logger: Logger) { self.logger = logger }

    /// A stored source and the account it belongs to.
    public typealias Owned = (record: EntitlementRecord, account: AccountID?)

    /// Stores a new grant for `account`, unless `requestKey` names one stored already: the grant stored, and whether
    /// it is this one.
    public func insertGrant(_ record: EntitlementRecord, account: AccountID, requestKey: String?, on connection: PostgresConnection)
        async throws -> (record: EntitlementRecord, inserted: Bool)
    {
        let inserted = try await connection.query(
            """
            INSERT INTO entitlement_sources (id, kind, store, account_id, tier, starts_at, ends_at, reason, created_by, request_key)
            VALUES (\(record.id), 'grant', \(record.store.text), \(account), \(record.tier), \(record.startsAt), \(record.endsAt),
                \(record.reason), \(record.createdBy), \(requestKey))
            ON CONFLICT (account_id, request_key) WHERE request_key IS NOT NULL DO NOTHING
            RETURNING id
            """, logger: logger)
        for try await _ in inserted { return (record, true) }
        let earlier = try await connection.query(
            "SELECT \(unescaped: Self.columns) FROM entitlement_sources WHERE account_id = \(account) AND request_key = \(requestKey)",
            logger: logger)
        for try await row in earlier { return (try Self.decode(row).record, false) }
        throw PersistenceError(.corruptRecord, "grant \(record.id) was neither stored nor found by its request key")
    }

    /// Ends a grant at `now` unless it ended already (early or by the clock): the grant as it is then, and whether this
    /// call ended it; `nil` when there is no such grant.
    public func endGrant(_ id: String, at now: Date, on connection: PostgresConnection) async throws -> (Owned, ended: Bool)? {
        let ended = try await connection.query(
            """
            UPDATE entitlement_sources SET ended_at = greatest(\(now), starts_at), end_reason = 'ENDED_BY_OPERATOR'
            WHERE id = \(id) AND kind = 'grant' AND ended_at IS NULL AND (ends_at IS NULL OR ends_at > \(now))
            RETURNING \(unescaped: Self.columns)
            """, logger: logger)
        for try await row in ended { return (try Self.decode(row), true) }
        guard let grant = try await source(id, on: connection), grant.record.kind == .grant else { return nil }
        return (grant, false)
    }

    /// One source by id.
    public func source(_ id: String, on connection: PostgresConnection) async throws -> Owned? {
        let rows = try await connection.query("SELECT \(unescaped: Self.columns) FROM entitlement_sources WHERE id = \(id)", logger: logger)
        for try await row in rows { return try Self.decode(row) }
        return nil
    }

    /// Every grant and purchase of `account`, ended or not, newest first.
    public func sources(of account: AccountID, kind: EntitlementRecord.Kind? = nil, on connection: PostgresConnection) async throws
        -> [EntitlementRecord]
    {
        let rows = try await connection.query(
            """
            SELECT \(unescaped: Self.columns) FROM entitlement_sources
            WHERE account_id = \(account) AND (\(kind?.text)::text IS NULL OR kind = \(kind?.text))
            ORDER BY created_at DESC, id
            """, logger: logger)
        var records: [EntitlementRecord] = []
        for try await row in rows { records.append(try Self.decode(row).record) }
        return records
    }

    /// Stores a version of a one-time purchase, keeping the newest (``EntitlementRecord/newest(_:_:)``: the later
    /// signing, and on a tie the one that says it was taken back) and the first account named: the purchase as it is
    /// stored afterwards.
    public func savePurchase(_ record: EntitlementRecord, account: AccountID?, on connection: PostgresConnection) async throws -> Owned {
        // `newer`: the version offered replaces the one held.
        let newer = """
            (excluded.signed_date, excluded.ended_at IS NOT NULL) > (held.signed_date, held.ended_at IS NOT NULL)
            """
        let rows = try await connection.query(
            """
            INSERT INTO entitlement_sources AS held (id, kind, store, account_id, product_id, starts_at, ended_at, end_reason,
                environment, ownership, signed_date)
            VALUES (\(record.id), 'purchase', \(record.store.text), \(account), \(record.productId), \(record.startsAt), \(record.endedAt),
                \(record.endReason?.text), \(record.environment?.rawValue), \(record.ownership?.text), \(record.signedDate ?? 0))
            ON CONFLICT (id) DO UPDATE SET
                account_id = coalesce(held.account_id, excluded.account_id),
                product_id = CASE WHEN \(unescaped: newer) THEN excluded.product_id ELSE held.product_id END,
                starts_at = CASE WHEN \(unescaped: newer) THEN excluded.starts_at ELSE held.starts_at END,
                ended_at = CASE WHEN \(unescaped: newer) THEN excluded.ended_at ELSE held.ended_at END,
                end_reason = CASE WHEN \(unescaped: newer) THEN excluded.end_reason ELSE held.end_reason END,
                environment = CASE WHEN \(unescaped: newer) THEN excluded.environment ELSE held.environment END,
                ownership = CASE WHEN \(unescaped: newer) THEN excluded.ownership ELSE held.ownership END,
                signed_date = greatest(held.signed_date, excluded.signed_date)
            RETURNING \(unescaped: Self.columns)
            """, logger: logger)
        for try await row in rows { return try Self.decode(row) }
        throw PersistenceError(.corruptRecord, "purchase \(record.id) was not stored")
    }

    static let columns = """
        id, kind, store, account_id, product_id, tier, starts_at, ends_at, ended_at, end_reason, environment, ownership, reason, \
        created_by, signed_date
        """

    /// ``columns`` as the fields of `composite`, a value of the table's row type, each named `<composite>_<column>`: read
    /// beside a subscription's columns, whose names some of them share.
    static func columns(of composite: String) -> String {
        columns.split(separator: ",").map {
            let column = $0.trimmingCharacters(in: .whitespacesAndNewlines)
            return "(\(composite)).\(column) AS \(composite)_\(column)"
        }.joined(separator: ", ")
    }

    /// A source from ``columns`` starting at `offset`.
    static func decode(_ row: PostgresRow, at offset: Int = 0) throws -> Owned {
        let cells = row.makeRandomAccess()
        func cell<T: PostgresDecodable>(_ index: Int, _: T.Type) throws -> T { try cells[offset + index].decode(T.self) }
        let record = EntitlementRecord(
            id: try cell(0, String.self), kind: EntitlementRecord.Kind(try cell(1, String.self)), store: Store(try cell(2, String.self)),
            productId: try cell(4, String?.self), tier: try cell(5, String?.self), startsAt: try cell(6, Date.self).wholeMilliseconds,
            endsAt: try cell(7, Date?.self)?.wholeMilliseconds, endedAt: try cell(8, Date?.self)?.wholeMilliseconds,
            endReason: try cell(9, String?.self).map(SourceEndReason.init),
            environment: try cell(10, String?.self).map(StoreEnvironment.init(rawValue:)),
            ownership: try cell(11, String?.self).map(Ownership.init), reason: try cell(12, String?.self), createdBy: try cell(13, String?.self),
            signedDate: try cell(14, Int64?.self))
        return (record, try cell(3, AccountID?.self))
    }

    static let columnCount = columns.split(separator: ",").count
}
