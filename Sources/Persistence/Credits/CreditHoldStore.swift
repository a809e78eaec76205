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

    let logger: Logger

    public init(logger: Logger) { self.logger = logger }

    static let columns =
        "id, account_id, idempotency_key, meter, amount, debits::text, created_at, expires_at, state, charged, returned, lapsed, ended_at"

    /// The ledger key of a hold's debit `index`.
    public static func debitKey(_ id: UUID, _ index: Int) -> String { "hold:\(id.uuidString.lowercased()):\(index)" }

    /// The hold `id`, if any.
    public func hold(_ id: UUID, on connection: PostgresConnection) async throws -> Hold? {
        try await first(connection.query("SELECT \(unescaped: Self.columns) FROM credit_holds WHERE id = \(id)", logger: logger))
    }

    /// What became of a bucket a hold took from since the hold (sql/0037's read): its kind, the top-up an upgrade
    /// carried its unspent credits to while that carry stands, and whether a refund or a prorated refund's claw-back
    /// took from it, not reversed.
    public struct BucketSinceHold: Codable, Sendable, Equatable {
        public var bucket: String
        /// `nil` for a bucket no longer stored (it lapses).
        public var kind: String?
        /// Live at the read's time and the hold's account's (its own, or of a subscription it holds): credits can go
        /// back to it (sql/0040; `nil` from a read before it).
        public var open: Bool?
        public var carriedTo: String?
        public var refunded: Bool
        /// The unpaid claims made since on the bucket its credits go back to (itself, or the top-up of a carry
        /// standing), oldest first (sql/0038; absent from a read of sql/0037's).
        public var claims: [HoldSettlement.Claim]?

        public init(
            bucket: String, kind: String?, open: Bool? = nil, carriedTo: String? = nil, refunded: Bool = false, claims: [HoldSettlement.Claim]? = nil
        ) {
            (self.bucket, self.kind, self.open, self.carriedTo, self.refunded, self.claims) = (bucket, kind, open, carriedTo, refunded, claims)
        }
    }

    /// A hold as a group read it: with what became of its buckets since, while it is held.
    public struct ReadHold: Sendable {
        public var hold: Hold
        public var since: [BucketSinceHold]
    }

    /// Where each bucket of `since` takes a debit of the hold back now (docs/credits.md, "Where credits go back"):
    /// the top-up an upgrade carried the bucket's unspent credits to, while that carry stands; else the bucket itself
    /// while it is among `open` — unless it is a window (not a top-up) a refund or claw-back took from since the hold
    /// (a top-up's refund takes back its own purchase's credits, not those held); else nowhere.
    public static func destinations(_ since: [BucketSinceHold], open: Set<String>) -> [String: String] {
        var destinations: [String: String] = [:]
        for bucket in since {
            if let carried = bucket.carriedTo {
                destinations[bucket.bucket] = carried
            } else if open.contains(bucket.bucket), CreditBucket.Kind(bucket.kind ?? "") == .topUp || !bucket.refunded {
                destinations[bucket.bucket] = bucket.bucket
            }
        }
        return destinations
    }

    /// The unpaid claims on each bucket of `since`, less what `paid` (by claim key) says earlier ends of the same
    /// transaction paid of them.
    public static func claims(_ since: [BucketSinceHold], less paid: [String: Int64] = [:]) -> [String: [HoldSettlement.Claim]] {
        var claims: [String: [HoldSettlement.Claim]] = [:]
        for bucket in since {
            let open = (bucket.claims ?? []).map { HoldSettlement.Claim(key: $0.key, outstanding: $0.outstanding - paid[$0.key, default: 0]) }
                .filter { $0.outstanding > 0 }
            if !open.isEmpty { claims[bucket.bucket] = open }
        }
        return claims
    }

    /// The rows of what `debits` give back by `outcome`: per debit, its return row keyed `key(index)` with all that
    /// went back before claims took their part, then the rows of what paid claims (`claim:…:paid:<payer(index)>`,
    /// CreditClaims), so the balance moves by what the customer got back.
    public static func returnEntries(
        of outcome: HoldSettlement.Outcome, debits: [HoldSettlement.Debit], reason: String, key: (Int) -> String, payer: (Int) -> String
    ) -> [LedgerEntry] {
        func index(_ bucket: String) -> Int { debits.firstIndex { $0.bucket == bucket } ?? 0 }
        var entries: [LedgerEntry] = []
        for (position, debit) in debits.enumerated() {
            let gross = outcome.gross(from: debit.bucket)
            guard gross > 0, let target = outcome.destination(of: debit.bucket) else { continue }
            entries.append(LedgerEntry(operationKey: key(position), bucket: target, delta: gross, reason: reason))
        }
        return entries
            + outcome.payments.map { payment in
                LedgerEntry(
                    operationKey: CreditClaims.paymentKey(claim: payment.claim, payer: payer(index(payment.from))), bucket: payment.bucket,
                    delta: -payment.amount, reason: "top-up refunded (credits came back)")
            }
    }

    /// The ledger rows of a new hold: its debits (reason `hold`), `hold:<id>:<n>`.
    public static func debitEntries(of hold: Hold) -> [LedgerEntry] {
        hold.debits.enumerated().map { index, debit in
            LedgerEntry(operationKey: debitKey(hold.id, index), bucket: debit.bucket, delta: -debit.amount, reason: "hold")
        }
    }

    /// The ledger rows of a hold's end: what goes back (`hold-return:…`) and the charged part as usage
    /// (`hold-charge:…`, offset first, so the bucket's balance is unchanged by it and the usage analytics count it on the
    /// day it settled). Where a debit's rest goes back to its own bucket, the charged part's offset is in its return
    /// row (`hold-return:…` is then the debit given back whole): a settle of part of a hold writes two rows a debit, not
    /// three (issue 53's pace).
    public static func endEntries(of hold: Hold, outcome: HoldSettlement.Outcome) -> [LedgerEntry] {
        let id = hold.id.uuidString.lowercased()
        // Keyed by the debit it gives back (a hold takes once from each bucket), not by its place among the returns:
        // two ends of one hold, however they raced, write the same keys, and the second's are skipped.
        func returnKey(_ index: Int) -> String { "hold-return:\(id):\(index)" }
        var entries = returnEntries(of: outcome, debits: hold.debits, reason: "hold returned", key: returnKey, payer: returnKey)
        // The charge is taken from the front of the debits (HoldSettlement): the n-th charged is the n-th debit's.
        for (index, charged) in outcome.charged.enumerated() {
            if outcome.destination(of: charged.bucket) == charged.bucket,
                let returned = entries.firstIndex(where: { $0.operationKey == returnKey(index) })
            {
                entries[returned].delta += charged.amount
            } else {
                entries.append(
                    LedgerEntry(
                        operationKey: "hold-charge:\(id):\(index):offset", bucket: charged.bucket, delta: charged.amount, reason: "hold charged"))
            }
            entries.append(LedgerEntry(operationKey: "hold-charge:\(id):\(index)", bucket: charged.bucket, delta: -charged.amount, reason: "usage"))
        }
        return entries
    }

    /// Writes what a group did, in one statement: its ledger rows (a key posted already is skipped), the holds it
    /// took (as they stand at its end: a hold taken and ended in one group is stored ended), and the ends of holds
    /// taken before (only of those still held), ended at `date`. (Arrays of optionals do not bind: a hold's outcome
    /// not known yet is sent as -1 or the epoch.)
    public func write(posting postings: [LedgerEntry], taken: [Hold], ended: [Hold], at date: Date, on connection: PostgresConnection) async throws {
        guard !postings.isEmpty || !taken.isEmpty || !ended.isEmpty else { return }
        let encoder = JSONEncoder()
        let debits = try taken.map { String(decoding: try encoder.encode($0.debits.map(StoredDebit.init)), as: UTF8.self) }
        let rows = try await connection.query(
            """
            WITH posted AS (
                INSERT INTO credit_ledger (operation_key, bucket, delta, reason, created_at)
                SELECT *, \(date)::timestamptz FROM unnest(\(postings.map(\.operationKey))::text[], \(postings.map(\.bucket))::text[],
                    \(postings.map(\.delta))::bigint[], \(postings.map(\.reason))::text[])
                ON CONFLICT (operation_key) DO NOTHING RETURNING operation_key
            ), taken AS (
                INSERT INTO credit_holds (id, account_id, idempotency_key, meter, amount, debits, created_at, expires_at, state, charged, returned,
                    lapsed, ended_at)
                SELECT id, account, key, meter, amount, debits::jsonb, created, expires, state, nullif(charged, -1), nullif(returned, -1),
                    nullif(lapsed, -1), nullif(ended, 'epoch') FROM unnest(
                    \(taken.map(\.id))::uuid[], \(taken.map(\.account.text))::text[], \(taken.map(\.idempotencyKey))::text[],
                    \(taken.map(\.meter))::text[], \(taken.map(\.amount))::bigint[], \(debits)::text[], \(taken.map(\.createdAt))::timestamptz[],
                    \(taken.map(\.expiresAt))::timestamptz[], \(taken.map(\.state.text))::text[], \(taken.map { $0.charged ?? -1 })::bigint[],
                    \(taken.map { $0.returned ?? -1 })::bigint[], \(taken.map { $0.lapsed ?? -1 })::bigint[],
                    \(taken.map { $0.endedAt ?? Date(timeIntervalSince1970: 0) })::timestamptz[])
                    AS t(id, account, key, meter, amount, debits, created, expires, state, charged, returned, lapsed, ended)
            ), ended AS (
                UPDATE credit_holds h SET state = e.state, charged = e.charged, returned = e.returned, lapsed = e.lapsed, ended_at = e.ended
                FROM unnest(\(ended.map(\.id))::uuid[], \(ended.map(\.state.text))::text[], \(ended.map { $0.charged ?? 0 })::bigint[],
                    \(ended.map { $0.returned ?? 0 })::bigint[], \(ended.map { $0.lapsed ?? 0 })::bigint[], \(ended.map { $0.endedAt ?? date })::timestamptz[])
                    AS e(id, state, charged, returned, lapsed, ended)
                -- Still held: `ended_at IS NULL` (sql/0036's CHECK), not `state = 'held'`, which let the planner scan every
                -- open hold through the partial index of due ones instead of finding these by id.
                WHERE h.id = e.id AND h.ended_at IS NULL
            )
            SELECT operation_key FROM posted
            """, logger: logger)
        for try await key in rows.decode(String.self) { CreditLedger.countPosted(key) }
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

    private func first(_ rows: PostgresRowSequence) async throws -> Hold? {
        for try await row in rows { return try Self.decode(row) }
        return nil
    }

    /// Decodes a hold from the columns of `row` from `offset` on, in ``columns``' order (others are the caller's).
    static func decode(_ row: PostgresRow, at offset: Int = 0) throws -> Hold {
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
        guard let accountId = AccountID(account), let stored = try? JSONDecoder().decode([StoredDebit].self, from: Data(debitsText.utf8)) else {
            throw PersistenceError(.corruptRecord, "a stored hold does not decode")
        }
        let debits = stored.map { HoldSettlement.Debit(bucket: $0.bucket, amount: $0.amount) }
        return Hold(
            id: id, account: accountId, idempotencyKey: key, meter: meter, amount: amount, debits: debits, createdAt: created, expiresAt: expires,
            state: .init(state), charged: charged, returned: returned, lapsed: lapsed, endedAt: ended)
    }
}
