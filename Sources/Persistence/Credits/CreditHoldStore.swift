import Credits
import Events
import Foundation
import Logging
import PayloadDecoding
import PostgresNIO
import StatementFencing
import Subscriptions

/// Holds of credits (`credit_holds`, sql/0036): one statement per intent. Every method runs on the caller's
/// transaction, the account's lock held (``CreditLedger/lockAccount(_:on:)``), as spends do.
public struct CreditHoldStore: Sendable {
    /// A debit as `credit_holds.debits` keeps it.
    struct StoredDebit: Decodable {
        var bucket: String
        var amount: Int64

        /// `debits` as the column takes them, `[{"amount":…,"bucket":…}]`, written by hand: `JSONEncoder` cost a hold
        /// about 1 % of `serve`'s CPU.
        static func json(_ debits: [HoldSettlement.Debit]) -> String {
            var writer = JSONWriter(capacity: 48 * debits.count + 2)
            writer.beginArray()
            for debit in debits {
                writer.element()
                writer.beginObject()
                writer.member("amount", debit.amount)
                writer.member("bucket", debit.bucket)
                writer.endObject()
            }
            writer.endArray()
            return String(decoding: writer.bytes, as: UTF8.self)
        }
    }

    let logger: Logger

    public init(logger: Logger) { self.logger = logger }

    static let columns =
        "id, account_id, idempotency_key, meter, amount, debits::text, created_at, expires_at, state, charged, returned, lapsed, ended_at"

    /// The hold `id`, if any.
    public func hold(_ id: UUID, on connection: PostgresConnection) async throws -> CreditHold? {
        try await first(connection.query("SELECT \(unescaped: Self.columns) FROM credit_holds WHERE id = \(id)", logger: logger))
    }

    /// A hold as a group read it: with what became of its buckets since, while it is held.
    public struct ReadHold: Sendable {
        public var hold: CreditHold
        public var since: [CreditHold.BucketSince]
    }

    /// Writes what a group did, in one prepared call (`write_hold_group`, sql/0051): its ledger rows (a key posted
    /// already is skipped), the holds it took (as they stand at its end: a hold taken and ended in one group is stored
    /// ended), and the ends of holds taken before (only of those still held), ended at `date`; then tells the other
    /// processes (`storekeeper_account_changed`) whose holds changed, posted or not.
    public func write(posting postings: [LedgerEntry], taken: [CreditHold], ended: [CreditHold], at date: Date, on connection: PostgresConnection)
        async throws
    {
        guard !postings.isEmpty || !taken.isEmpty || !ended.isEmpty else { return }
        let debits = taken.map { StoredDebit.json($0.debits) }
        // Arrays of optionals do not bind: a hold's outcome not known yet is sent as -1 or the epoch.
        let rows = try await connection.run(
            PreparedQuery<WriteHoldGroup>(
                postings.map(\.operationKey), postings.map(\.bucket), postings.map(\.delta), postings.map(\.reason), date,
                taken.map(\.id), taken.map(\.account.text), taken.map(\.idempotencyKey), taken.map(\.meter), taken.map(\.amount), debits,
                taken.map(\.createdAt), taken.map(\.expiresAt), taken.map(\.state.text), taken.map { $0.charged ?? -1 },
                taken.map { $0.returned ?? -1 }, taken.map { $0.lapsed ?? -1 }, taken.map { $0.endedAt ?? Date(timeIntervalSince1970: 0) },
                ended.map(\.id), ended.map(\.state.text), ended.map { $0.charged ?? 0 }, ended.map { $0.returned ?? 0 },
                ended.map { $0.lapsed ?? 0 }, ended.map { $0.endedAt ?? date },
                Set((taken + ended).map(\.account.text)).sorted()),
            logger: logger)
        for row in rows { CreditLedger.countPosted(try row.decode(String.self)) }
    }

    /// `write_hold_group` (sql/0051) of `$1`…`$25`.
    enum WriteHoldGroup: PreparedSQL {
        static let sql = """
            SELECT write_hold_group($1::text[], $2::text[], $3::bigint[], $4::text[], $5::timestamptz, $6::uuid[], $7::text[], $8::text[],
                $9::text[], $10::bigint[], $11::text[], $12::timestamptz[], $13::timestamptz[], $14::text[], $15::bigint[], $16::bigint[],
                $17::bigint[], $18::timestamptz[], $19::uuid[], $20::text[], $21::bigint[], $22::bigint[], $23::bigint[], $24::timestamptz[],
                $25::text[])
            """
    }

    /// Up to `limit` holds still held whose expiry is at or before `date`, the earliest first, but those in `skipping`
    /// (refused by the database in this sweep).
    public func dueHolds(at date: Date, limit: Int, skipping: [UUID] = [], on connection: PostgresConnection) async throws -> [UUID] {
        let rows = try await connection.query(
            """
            SELECT id FROM credit_holds WHERE state = 'held' AND expires_at <= \(date) AND id <> ALL(\(skipping)::uuid[])
            ORDER BY expires_at LIMIT \(limit)
            """, logger: logger)
        var ids: [UUID] = []
        for try await id in rows.decode(UUID.self) { ids.append(id) }
        return ids
    }

    private func first(_ rows: some AsyncSequence<PostgresRow, any Error>) async throws -> CreditHold? {
        for try await row in rows { return try Self.decode(row) }
        return nil
    }

    /// Decodes a hold from the columns of `row` from `offset` on, in ``columns``' order (others are the caller's).
    static func decode(_ row: PostgresRow, at offset: Int = 0) throws -> CreditHold {
        let cells = row.makeRandomAccess()
        let (id, account, key, meter, amount, debitsText) = try (
            cells[offset].decode(UUID.self), cells[offset + 1].decode(String.self), cells[offset + 2].decode(String.self),
            cells[offset + 3].decode(String.self), cells[offset + 4].decode(Int64.self), cells[offset + 5].decode(String.self)
        )
        let (created, expires, state, charged, returned, lapsed, ended) = try (
            cells[offset + 6].decode(Date.self), cells[offset + 7].decode(Date.self), cells[offset + 8].decode(String.self),
            cells[offset + 9].decode(Int64?.self), cells[offset + 10].decode(Int64?.self), cells[offset + 11].decode(Int64?.self),
            cells[offset + 12].decode(Date?.self)
        )
        guard let accountId = AccountID(account), let stored = try? PayloadDecoder().decode([StoredDebit].self, from: Array(debitsText.utf8)) else {
            throw PersistenceError(.corruptRecord, "a stored hold does not decode")
        }
        let debits = stored.map { HoldSettlement.Debit(bucket: $0.bucket, amount: $0.amount) }
        return CreditHold(
            id: id, account: accountId, idempotencyKey: key, meter: meter, amount: amount, debits: debits, createdAt: created, expiresAt: expires,
            state: .init(state), charged: charged, returned: returned, lapsed: lapsed, endedAt: ended)
    }
}
