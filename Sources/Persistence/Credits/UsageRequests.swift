import Credits
import Events
import Foundation
import Logging
import PostgresNIO
import StatementFencing
import Subscriptions

/// The first answer to each usage request (`usage_requests`), returned for every retry with the same idempotency key.
public struct UsageRequests: Sendable {
    /// One usage request (`POST /v1/accounts/{id}/usage`).
    public struct Request: Sendable {
        public var account: AccountID
        public var meter: String
        public var amount: Int64
        public var idempotencyKey: String

        public init(account: AccountID, meter: String, amount: Int64, idempotencyKey: String) {
            self.account = account
            self.meter = meter
            self.amount = amount
            self.idempotencyKey = idempotencyKey
        }
    }

    /// The answer to a usage request; the first one is stored and returned for every retry with the same key.
    public struct Answer: Codable, Sendable, Equatable {
        /// What happened, as the domain says it (the HTTP layer maps it to a status).
        public enum Outcome: String, Codable, Sendable {
            case spent
            case insufficientCredits = "insufficient_credits"
            case idempotencyKeyReused = "idempotency_key_reused"
        }

        public var outcome: Outcome
        public var meter: String
        /// What is left after the request; `nil` for an unlimited meter.
        public var remaining: Int64?
        public var error: String?
        public var message: String?

        public init(outcome: Outcome, meter: String, remaining: Int64?, error: String? = nil, message: String? = nil) {
            self.outcome = outcome
            self.meter = meter
            self.remaining = remaining
            self.error = error
            self.message = message
        }

        enum CodingKeys: String, CodingKey { case outcome, httpStatus, meter, remaining, error, message }

        public init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            // Answers stored before 0008 carry the HTTP status they were sent with.
            if let outcome = try container.decodeIfPresent(Outcome.self, forKey: .outcome) {
                self.outcome = outcome
            } else {
                switch try container.decode(Int.self, forKey: .httpStatus) {
                case 402: outcome = .insufficientCredits
                case 422: outcome = .idempotencyKeyReused
                default: outcome = .spent
                }
            }
            meter = try container.decode(String.self, forKey: .meter)
            remaining = try container.decodeIfPresent(Int64.self, forKey: .remaining)
            error = try container.decodeIfPresent(String.self, forKey: .error)
            message = try container.decodeIfPresent(String.self, forKey: .message)
        }

        public func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(outcome, forKey: .outcome)
            try container.encode(meter, forKey: .meter)
            try container.encodeIfPresent(remaining, forKey: .remaining)
            try container.encodeIfPresent(error, forKey: .error)
            try container.encodeIfPresent(message, forKey: .message)
        }

        /// As ``encode(to:)`` writes it, written by hand for `usage_requests.answer`: `JSONEncoder`, this its main use
        /// on the way, was 1.6 % of `serve`'s CPU under spends.
        var json: String {
            var writer = JSONWriter(capacity: 96)
            writer.beginObject()
            writer.member("outcome", outcome.rawValue)
            writer.member("meter", meter)
            if let remaining { writer.member("remaining", remaining) }
            if let error { writer.member("error", error) }
            if let message { writer.member("message", message) }
            writer.endObject()
            return String(decoding: writer.bytes, as: UTF8.self)
        }
    }

    let logger: Logger

    public init(logger: Logger) { self.logger = logger }

    /// Takes the locks of the accounts of `requests` for the transaction, in one order (sorted, so that two groups
    /// sharing accounts wait for each other instead of deadlocking), then reads the answers stored under their keys
    /// (see ``StoredAnswer/answer(to:)``): one round trip (`lock_accounts_and_read_answers`,
    /// sql/0015_spend_group_locks.sql), the read made after the locks are held.
    public func lockAccountsAndReadAnswers(_ requests: [Request], on connection: PostgresConnection) async throws -> [Key: StoredAnswer] {
        let lockKeys = Set(requests.map(\.account)).sorted().map(CreditLedger.lockKey)
        let rows = try await connection.run(
            PreparedQuery<LockAccountsAndReadAnswers>(lockKeys, requests.map(\.account.text), requests.map(\.idempotencyKey)),
            logger: logger)
        var stored: [Key: StoredAnswer] = [:]
        for row in rows {
            let (account, key, meter, amount, text) = try row.decode((AccountID, String, String, Int64, String).self)
            guard let answer = try? JSONDecoder().decode(Answer.self, from: Data(text.utf8)) else {
                throw PersistenceError(.corruptRecord, "stored usage answer does not decode")
            }
            stored[Key(account: account, idempotencyKey: key)] = StoredAnswer(meter: meter, amount: amount, answer: answer)
        }
        return stored
    }

    /// Locks accounts `$1` (lock keys, in order) and returns the answers stored under (account, key) pairs `$2`, `$3`.
    enum LockAccountsAndReadAnswers: PreparedSQL {
        static let sql = """
            SELECT answer_account, answer_key, answer_meter, answer_amount, answer_text
            FROM lock_accounts_and_read_answers($1::text[], $2::text[], $3::text[])
            """
    }

    /// Reads ahead, outside any group and without a row lock, the pages a group will read and write for `request` at
    /// `date` (`read_spend_pages_ahead`, sql/0052): its stored answer's key, its first debit's key in the ledger, the
    /// account's status inputs and its meter's live buckets' places in the ledger's indexes. A group's reads are made
    /// one after another, so a spend whose pages are on the disk holds up every spend behind it; read here, beside
    /// other spends' reads, they are in memory when its group comes. Returns how many index entries and rows it found
    /// (nothing to act on).
    @discardableResult
    public func readPagesAhead(for request: Request, at date: Date, on connection: PostgresConnection) async throws -> Int64 {
        let prefix = Self.debitKeyPrefix(account: request.account, idempotencyKey: request.idempotencyKey, micros: nil)
        let rows = try await connection.run(
            PreparedQuery<ReadSpendPagesAhead>(request.account.text, request.idempotencyKey, request.meter, prefix, date), logger: logger)
        return try rows.first?.decode(Int64.self) ?? 0
    }

    /// The pages a spend of account `$1` under key `$2` of meter `$3` (debit keys from `$4`) reads and writes at `$5`,
    /// read.
    enum ReadSpendPagesAhead: PreparedSQL {
        static let sql = "SELECT read_spend_pages_ahead($1::text, $2::text, $3::text, $4::text, $5)"
    }

    /// A request's first answer and, when it was charged, what it took from each bucket, in spend order.
    public struct FirstAnswer: Sendable {
        public var answer: Answer
        public var request: Request
        public var debits: [(bucket: String, amount: Int64)]

        public init(answer: Answer, request: Request, debits: [(bucket: String, amount: Int64)] = []) {
            (self.answer, self.request, self.debits) = (answer, request, debits)
        }
    }

    /// Stores the first answer to each request, as given at `date`, and posts its debits (reason `usage`), in one
    /// statement (a round trip less for every group of spends).
    ///
    /// A debit's key is ``debitKeyPrefix(account:idempotencyKey:micros:)`` and its index. The first spend under a key
    /// writes the plain keys, as every release did; a key used again after the idempotency window deleted its answer
    /// finds its first spend's debits still in the ledger (`…:0`), and its own carry ``micros(at:)`` of `date`, which
    /// its answer keeps for a reversal. One index probe per charged spend decides it, in the same statement. A debit
    /// key found posted already throws (the group is rolled back): the spend would otherwise go uncharged.
    public func store(_ answers: [FirstAnswer], at date: Date, on connection: PostgresConnection) async throws {
        guard !answers.isEmpty else { return }
        let texts = answers.map(\.answer.json)
        let prefixes = answers.map { Self.debitKeyPrefix(account: $0.request.account, idempotencyKey: $0.request.idempotencyKey, micros: nil) }
        var spends: [Int64] = []
        var indexes: [Int64] = []
        var buckets: [String] = []
        var amounts: [Int64] = []
        for (spend, first) in answers.enumerated() {
            for (index, debit) in first.debits.enumerated() {
                spends.append(Int64(spend + 1))
                indexes.append(Int64(index))
                buckets.append(debit.bucket)
                amounts.append(debit.amount)
            }
        }
        let rows = try await connection.query(
            """
            WITH keyed AS (
                SELECT a.*, CASE WHEN a.charged AND EXISTS (SELECT 1 FROM credit_ledger l WHERE l.operation_key = a.prefix || ':0')
                                 THEN \(Self.micros(at: date)) END AS micros
                FROM unnest(\(answers.map(\.request.account.text))::text[], \(answers.map(\.request.idempotencyKey))::text[],
                    \(answers.map(\.request.meter))::text[], \(answers.map(\.request.amount))::bigint[],
                    \(answers.map(\.answer.outcome.rawValue))::text[], \(texts)::text[], \(prefixes)::text[],
                    \(answers.map { !$0.debits.isEmpty })::bool[])
                    WITH ORDINALITY AS a(account, key, meter, amount, outcome, answer, prefix, charged, spend)
            ), posted AS (
                INSERT INTO credit_ledger (operation_key, bucket, delta, reason, created_at)
                SELECT k.prefix || coalesce('@' || k.micros, '') || ':' || d.n, d.bucket, -d.amount, 'usage', \(date)
                FROM unnest(\(spends)::bigint[], \(indexes)::bigint[], \(buckets)::text[], \(amounts)::bigint[]) AS d(spend, n, bucket, amount)
                JOIN keyed k ON k.spend = d.spend
                ON CONFLICT (operation_key) DO NOTHING RETURNING operation_key
            ), answered AS (
                INSERT INTO usage_requests (account_id, idempotency_key, meter, amount, outcome, answer, created_at, debits_at_micros)
                SELECT account, key, meter, amount, outcome, answer::jsonb, \(date), micros FROM keyed
            )
            SELECT operation_key FROM posted
            """,
            logger: logger)
        var posted = 0
        for try await key in rows.decode(String.self) {
            CreditLedger.countPosted(key)
            posted += 1
        }
        // Every key is new by construction; one already posted would be a spend served uncharged (key `x@5` spent
        // first and key `x` used again at that microsecond would build the same string): refuse the group instead.
        guard posted == spends.count else {
            throw PersistenceError(.corruptRecord, "a spend's debit keys were posted before; nothing of the group is stored")
        }
    }

    /// What every ledger key of an account's spends starts with, with an empty `idempotencyKey`:
    /// `spend:<bytes of the account>:<account>:<key>`. Both ids may hold `:`, so the account is length-prefixed:
    /// without it, account `c` with key `x:y` and account `c:x` with key `y` wrote the same keys, and the second spend
    /// was dropped as already posted — served uncharged.
    public static func spendKey(account: AccountID, idempotencyKey: String) -> String {
        "spend:\(account.text.utf8.count):\(account.text):\(idempotencyKey)"
    }

    /// The ledger key of a spend's debits, before each debit's index (`…:<n>`): ``spendKey(account:idempotencyKey:)``
    /// alone for the first spend under a key, and `@<micros>` after it for a spend under a key used again once the
    /// idempotency window deleted its answer (the ledger keeps the first spend's debits for good: the same keys again
    /// would be dropped as posted, and the spend served uncharged). The answer keeps `micros` (`nil`: the plain keys).
    /// The time holds no `@` and the index no `:`, so two spends under one key, whatever its characters, stay apart.
    public static func debitKeyPrefix(account: AccountID, idempotencyKey: String, micros: Int64?) -> String {
        let key = spendKey(account: account, idempotencyKey: idempotencyKey)
        return micros.map { "\(key)@\($0)" } ?? key
    }

    /// The whole microseconds since 1970 of `date`, as the debit keys of a key used again carry them.
    public static func micros(at date: Date) -> Int64 {
        Int64((date.timeIntervalSince1970 * 1_000_000).rounded(.down))
    }

    /// What identifies a request's answer: the account and the key's bytes, as the database compares them (two keys
    /// Swift calls equal, `zé` composed and decomposed, are two requests there).
    public struct Key: Hashable, Sendable {
        public var account: AccountID
        public var idempotencyKey: String

        public init(account: AccountID, idempotencyKey: String) { (self.account, self.idempotencyKey) = (account, idempotencyKey) }

        public static func == (lhs: Key, rhs: Key) -> Bool {
            lhs.account == rhs.account && lhs.idempotencyKey.utf8.elementsEqual(rhs.idempotencyKey.utf8)
        }

        public func hash(into hasher: inout Hasher) {
            hasher.combine(account)
            idempotencyKey.utf8.hashBytes(into: &hasher)
        }
    }

    /// The first answer given under an idempotency key, with the spend it answered.
    public struct StoredAnswer: Sendable {
        public var meter: String
        public var amount: Int64
        public var answer: Answer

        public init(meter: String, amount: Int64, answer: Answer) {
            self.meter = meter
            self.amount = amount
            self.answer = answer
        }

        /// What `request`, under the same key, is answered: the stored answer again, or the key's reuse for another spend.
        public func answer(to request: Request) -> Answer {
            guard meter == request.meter, amount == request.amount else {
                return Answer(
                    outcome: .idempotencyKeyReused, meter: request.meter, remaining: nil, error: "idempotency_key_reused",
                    message: "idempotency key \(request.idempotencyKey) was used for \(amount) \(meter)")
            }
            return answer
        }
    }
}

extension UsageRequests.Request {
    /// The account and idempotency key.
    public var key: UsageRequests.Key { UsageRequests.Key(account: account, idempotencyKey: idempotencyKey) }
}
