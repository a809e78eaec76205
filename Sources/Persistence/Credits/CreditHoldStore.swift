import Credits
import Foundation
import Logging
import PostgresNIO
import Subscriptions

/// Holds of credits (`credit_holds`, sql/0036): one statement per intent. Every method runs on the caller's
/// transaction, the account's lock held (``CreditLedger/lockAccount(_:on:)``), as spends do.
public struct CreditHoldStore: Sendable {
    /// A hold as stored.
    public struct Hold: Sendable, Equatable {
        public enum State: Sendable, Equatable {
            case held, settled, released, expired
            case unknown(String)

            public init(_ text: String) {
                switch text {
                case "held": self = .held
                case "settled": self = .settled
                case "released": self = .released
                case "expired": self = .expired
                default: self = .unknown(text)
                }
            }

            public var text: String {
                switch self {
                case .held: return "held"
                case .settled: return "settled"
                case .released: return "released"
                case .expired: return "expired"
                case .unknown(let text): return text
                }
            }
        }

        public var id: UUID
        public var account: AccountID
        public var idempotencyKey: String
        public var meter: String
        public var amount: Int64
        public var debits: [HoldSettlement.Debit]
        public var createdAt: Date
        public var expiresAt: Date
        public var state: State
        public var charged: Int64?
        public var returned: Int64?
        public var lapsed: Int64?
        public var endedAt: Date?

        public init(
            id: UUID, account: AccountID, idempotencyKey: String, meter: String, amount: Int64, debits: [HoldSettlement.Debit], createdAt: Date,
            expiresAt: Date, state: State = .held, charged: Int64? = nil, returned: Int64? = nil, lapsed: Int64? = nil, endedAt: Date? = nil
        ) {
            (self.id, self.account, self.idempotencyKey, self.meter, self.amount) = (id, account, idempotencyKey, meter, amount)
            (self.debits, self.createdAt, self.expiresAt, self.state) = (debits, createdAt, expiresAt, state)
            (self.charged, self.returned, self.lapsed, self.endedAt) = (charged, returned, lapsed, endedAt)
        }
    }

    /// A debit as `credit_holds.debits` keeps it.
    struct StoredDebit: Codable {
        var bucket: String
        var amount: Int64

        init(bucket: String, amount: Int64) { (self.bucket, self.amount) = (bucket, amount) }
        init(_ debit: HoldSettlement.Debit) { self.init(bucket: debit.bucket, amount: debit.amount) }
    }

    private let logger: Logger

    public init(logger: Logger) { self.logger = logger }

    private static let columns = "id, account_id, idempotency_key, meter, amount, debits::text, created_at, expires_at, state, charged, returned, lapsed, ended_at"

    /// The ledger key of a hold's debit `index`.
    public static func debitKey(_ id: UUID, _ index: Int) -> String { "hold:\(id.uuidString.lowercased()):\(index)" }

    /// Stores a new hold and posts its debits (reason `hold`).
    public func insert(_ hold: Hold, on connection: PostgresConnection) async throws {
        let debits = String(decoding: try JSONEncoder().encode(hold.debits.map(StoredDebit.init)), as: UTF8.self)
        let keys = hold.debits.indices.map { Self.debitKey(hold.id, $0) }
        try await connection.query(
            """
            WITH posted AS (
                INSERT INTO credit_ledger (operation_key, bucket, delta, reason)
                SELECT key, bucket, -amount, 'hold' FROM unnest(\(keys)::text[], \(hold.debits.map(\.bucket))::text[], \(hold.debits.map(\.amount))::bigint[])
                    AS d(key, bucket, amount)
                RETURNING 1
            )
            INSERT INTO credit_holds (id, account_id, idempotency_key, meter, amount, debits, created_at, expires_at)
            VALUES (\(hold.id), \(hold.account.text), \(hold.idempotencyKey), \(hold.meter), \(hold.amount), \(debits)::jsonb, \(hold.createdAt), \(hold.expiresAt))
            """, logger: logger)
    }

    /// The hold `id`, if any.
    public func hold(_ id: UUID, on connection: PostgresConnection) async throws -> Hold? {
        try await first(connection.query("SELECT \(unescaped: Self.columns) FROM credit_holds WHERE id = \(id)", logger: logger))
    }

    /// The hold an account took under `idempotencyKey`, if any.
    public func hold(of account: AccountID, idempotencyKey: String, on connection: PostgresConnection) async throws -> Hold? {
        try await first(connection.query(
            "SELECT \(unescaped: Self.columns) FROM credit_holds WHERE account_id = \(account.text) AND idempotency_key = \(idempotencyKey)",
            logger: logger))
    }

    /// Where each of `buckets` can take a debit of hold `holdId` back now (see ``HoldSettlement``): the bucket itself
    /// while it is among `open` — unless it is a window (not a top-up) a refund or a prorated refund's claw-back took
    /// from since the hold, not reversed; else the top-up an upgrade carried its unspent credits to since the hold, while that carry stands (no
    /// refund or reversal of it); else nowhere. A top-up's refund takes back its own purchase's credits, not those held.
    public func destinations(
        of buckets: [String], holdId: UUID, open: Set<String>, on connection: PostgresConnection
    ) async throws -> [String: String] {
        let rows = try await connection.query(
            """
            WITH since AS (SELECT id FROM credit_ledger WHERE operation_key = \(Self.debitKey(holdId, 0)))
            SELECT b.bucket, k.kind,
                (SELECT i.bucket FROM credit_ledger o JOIN credit_ledger i ON i.operation_key = left(o.operation_key, -3) || 'in'
                 WHERE o.bucket = b.bucket AND o.operation_key LIKE 'carry:%:out' AND o.id > (SELECT id FROM since)
                   AND NOT EXISTS (SELECT 1 FROM credit_ledger x WHERE x.operation_key IN ('reversed:' || i.operation_key, 'reversed:' || o.operation_key))
                   AND NOT EXISTS (SELECT 1 FROM credit_ledger r WHERE r.bucket = i.bucket AND r.operation_key LIKE 'refund:%' AND r.id > i.id
                       AND right(r.operation_key, length(i.operation_key) + 1) = ':' || i.operation_key)
                 ORDER BY o.id DESC LIMIT 1),
                EXISTS (SELECT 1 FROM credit_ledger r WHERE r.bucket = b.bucket AND r.delta < 0 AND r.id > (SELECT id FROM since)
                    AND (r.operation_key LIKE 'refund:%' OR r.operation_key LIKE 'clawback:%')
                    AND NOT EXISTS (SELECT 1 FROM credit_ledger x WHERE x.operation_key = 'reversed:' || r.operation_key))
            FROM unnest(\(buckets)::text[]) AS b(bucket) JOIN credit_buckets k ON k.key = b.bucket
            """, logger: logger)
        var destinations: [String: String] = [:]
        for try await (bucket, kind, carried, refunded) in rows.decode((String, String, String?, Bool).self) {
            if let carried {
                destinations[bucket] = carried
            } else if open.contains(bucket), CreditBucket.Kind(kind) == .topUp || !refunded {
                destinations[bucket] = bucket
            }
        }
        return destinations
    }

    /// Ends a hold: posts what goes back (`hold-return:…`) and the charged part as usage (`hold-charge:…`, with its
    /// offset, so the bucket's balance is unchanged by it), and records the outcome.
    public func end(
        _ hold: Hold, as state: Hold.State, charging charge: Int64, outcome: HoldSettlement.Outcome, at date: Date, on connection: PostgresConnection
    ) async throws {
        let id = hold.id.uuidString.lowercased()
        var entries: [LedgerEntry] = []
        for (index, back) in outcome.returns.enumerated() {
            entries.append(LedgerEntry(operationKey: "hold-return:\(id):\(index)", bucket: back.bucket, delta: back.amount, reason: "hold returned"))
        }
        for (index, charged) in outcome.charged.enumerated() {
            entries.append(LedgerEntry(operationKey: "hold-charge:\(id):\(index):offset", bucket: charged.bucket, delta: charged.amount, reason: "hold charged"))
            entries.append(LedgerEntry(operationKey: "hold-charge:\(id):\(index)", bucket: charged.bucket, delta: -charged.amount, reason: "usage"))
        }
        try await connection.query(
            """
            WITH posted AS (
                INSERT INTO credit_ledger (operation_key, bucket, delta, reason)
                SELECT * FROM unnest(\(entries.map(\.operationKey))::text[], \(entries.map(\.bucket))::text[], \(entries.map(\.delta))::bigint[],
                    \(entries.map(\.reason))::text[])
                ON CONFLICT (operation_key) DO NOTHING
                RETURNING 1
            )
            UPDATE credit_holds SET state = \(state.text), charged = \(charge), returned = \(outcome.returned),
                lapsed = \(outcome.lapsed), ended_at = \(date)
            WHERE id = \(hold.id) AND state = 'held'
            """, logger: logger)
    }

    private func first(_ rows: PostgresRowSequence) async throws -> Hold? {
        for try await row in rows { return try Self.decode(row) }
        return nil
    }

    static func decode(_ row: PostgresRow) throws -> Hold {
        let (id, account, key, meter, amount, debitsText, created, expires, state, charged, returned, lapsed, ended) = try row.decode(
            (UUID, String, String, String, Int64, String, Date, Date, String, Int64?, Int64?, Int64?, Date?).self)
        guard let accountId = AccountID(account), let stored = try? JSONDecoder().decode([StoredDebit].self, from: Data(debitsText.utf8)) else {
            throw PersistenceError(.corruptRecord, "a stored hold does not decode")
        }
        let debits = stored.map { HoldSettlement.Debit(bucket: $0.bucket, amount: $0.amount) }
        return Hold(
            id: id, account: accountId, idempotencyKey: key, meter: meter, amount: amount, debits: debits, createdAt: created, expiresAt: expires,
            state: .init(state), charged: charged, returned: returned, lapsed: lapsed, endedAt: ended)
    }
}
