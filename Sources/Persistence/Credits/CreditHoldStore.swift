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

    private let logger: Logger

    public init(logger: Logger) { self.logger = logger }

    private static let columns = "id, account_id, idempotency_key, meter, amount, debits::text, created_at, expires_at, state, charged, returned, lapsed, ended_at"

    /// The ledger key of a hold's debit `index`.
    public static func debitKey(_ id: UUID, _ index: Int) -> String { "hold:\(id.uuidString.lowercased()):\(index)" }

    /// Stores a new hold and posts its debits (reason `hold`).
    public func insert(_ hold: Hold, on connection: PostgresConnection) async throws {
        let debits = String(decoding: try JSONEncoder().encode(hold.debits.map { ["bucket": $0.bucket, "amount": String($0.amount)] }), as: UTF8.self)
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

    /// How much each meter of `account` has held now.
    public func held(of account: AccountID, on connection: PostgresConnection) async throws -> [String: Int64] {
        let rows = try await connection.query(
            "SELECT meter, sum(amount)::bigint FROM credit_holds WHERE account_id = \(account.text) AND state = 'held' GROUP BY meter",
            logger: logger)
        var held: [String: Int64] = [:]
        for try await (meter, amount) in rows.decode((String, Int64).self) { held[meter] = amount }
        return held
    }

    /// The account's holds, newest first.
    public func holds(of account: AccountID, limit: Int, on connection: PostgresConnection) async throws -> [Hold] {
        let rows = try await connection.query(
            "SELECT \(unescaped: Self.columns) FROM credit_holds WHERE account_id = \(account.text) ORDER BY created_at DESC, id LIMIT \(limit)",
            logger: logger)
        var holds: [Hold] = []
        for try await row in rows { holds.append(try Self.decode(row)) }
        return holds
    }

    /// Where a debit of a hold posted at ledger id `since` or later can go back to now, for each of `buckets`: the
    /// bucket itself when it is among `open` and nothing but spends and holds took from it since; the top-up its unspent
    /// credits were carried to by an upgrade since; else nowhere.
    public func destinations(
        of buckets: [String], holdId: UUID, open: Set<String>, on connection: PostgresConnection
    ) async throws -> [String: String] {
        let rows = try await connection.query(
            """
            WITH since AS (SELECT min(id) AS id FROM credit_ledger WHERE operation_key LIKE \(Self.debitKey(holdId, 0).dropLast(1) + "%"))
            SELECT b.bucket,
                (SELECT i.bucket FROM credit_ledger o JOIN credit_ledger i ON i.operation_key = left(o.operation_key, -3) || 'in'
                 WHERE o.bucket = b.bucket AND o.operation_key LIKE 'carry:%:out' AND o.id > (SELECT id FROM since)
                 ORDER BY o.id DESC LIMIT 1),
                EXISTS (SELECT 1 FROM credit_ledger l WHERE l.bucket = b.bucket AND l.delta < 0 AND l.id > (SELECT id FROM since)
                    AND l.reason NOT IN ('usage', 'hold'))
            FROM unnest(\(buckets)::text[]) AS b(bucket)
            """, logger: logger)
        var destinations: [String: String] = [:]
        for try await (bucket, carried, taken) in rows.decode((String, String?, Bool).self) {
            if let carried { destinations[bucket] = carried } else if !taken, open.contains(bucket) { destinations[bucket] = bucket }
        }
        return destinations
    }

    /// Ends a hold: posts what goes back (`hold-return:…`) and the charged part as usage (`hold-charge:…`, with its
    /// offset, so the bucket's balance is unchanged by it), and records the outcome.
    public func end(_ hold: Hold, as state: Hold.State, outcome: HoldSettlement.Outcome, at date: Date, on connection: PostgresConnection) async throws {
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
            UPDATE credit_holds SET state = \(state.text), charged = \(outcome.charged.reduce(0) { $0 + $1.amount }), returned = \(outcome.returned),
                lapsed = \(outcome.lapsed), ended_at = \(date)
            WHERE id = \(hold.id) AND state = 'held'
            """, logger: logger)
    }

    /// Holds past their expiry, oldest first, not locked by another transaction.
    public func expired(at now: Date, limit: Int, on connection: PostgresConnection) async throws -> [(id: UUID, account: AccountID)] {
        let rows = try await connection.query(
            "SELECT id, account_id FROM credit_holds WHERE state = 'held' AND expires_at <= \(now) ORDER BY expires_at LIMIT \(limit)",
            logger: logger)
        var found: [(id: UUID, account: AccountID)] = []
        for try await (id, account) in rows.decode((UUID, String).self) {
            if let account = AccountID(account) { found.append((id, account)) }
        }
        return found
    }

    private func first(_ rows: PostgresRowSequence) async throws -> Hold? {
        for try await row in rows { return try Self.decode(row) }
        return nil
    }

    static func decode(_ row: PostgresRow) throws -> Hold {
        let (id, account, key, meter, amount, debitsText, created, expires, state, charged, returned, lapsed, ended) = try row.decode(
            (UUID, String, String, String, Int64, String, Date, Date, String, Int64?, Int64?, Int64?, Date?).self)
        guard let accountId = AccountID(account),
            let raw = try? JSONDecoder().decode([[String: String]].self, from: Data(debitsText.utf8))
        else { throw PersistenceError(.corruptRecord, "a stored hold does not decode") }
        let debits = try raw.map { entry -> HoldSettlement.Debit in
            guard let bucket = entry["bucket"], let amount = entry["amount"].flatMap(Int64.init) else {
                throw PersistenceError(.corruptRecord, "a stored hold's debit does not decode")
            }
            return HoldSettlement.Debit(bucket: bucket, amount: amount)
        }
        return Hold(
            id: id, account: accountId, idempotencyKey: key, meter: meter, amount: amount, debits: debits, createdAt: created, expiresAt: expires,
            state: .init(state), charged: charged, returned: returned, lapsed: lapsed, endedAt: ended)
    }
}
