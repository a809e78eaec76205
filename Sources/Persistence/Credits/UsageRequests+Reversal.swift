import Credits
import Crypto
import Foundation
import PostgresNIO
import Subscriptions

// Giving a spend back (POST /v1/accounts/{id}/usage/{idempotencyKey}/reverse): one statement to read the spend with
// what its buckets became since, one to post what goes back and record the reversal, on the caller's transaction, the
// account locked (CreditLedger.lockAccount).
extension UsageRequests {
    /// A spend given back: when, what went back and what lapsed with a bucket closed meanwhile.
    public struct Reversal: Sendable, Equatable {
        public var reversedAt: Date
        public var returned: Int64
        public var lapsed: Int64

        public init(reversedAt: Date, returned: Int64, lapsed: Int64) {
            (self.reversedAt, self.returned, self.lapsed) = (reversedAt, returned, lapsed)
        }
    }

    /// A stored spend, as its reversal needs it.
    public struct StoredSpend: Sendable {
        public var meter: String
        public var amount: Int64
        /// Whether it was charged (a refused spend has nothing to give back).
        public var spent: Bool
        public var spentAt: Date
        public var reversal: Reversal?
        /// Whether it was charged from a counted meter (its answer says what `remaining`): then it has debits.
        public var counted: Bool
        /// What its debits' ledger keys start with (``UsageRequests/debitKeyPrefix(account:idempotencyKey:micros:)``).
        public var debitKeyPrefix: String
        /// The microsecond its debit keys carry; `nil` for the plain keys (the first spend under a key).
        public var micros: Int64?
        /// What it took from each bucket, in spend order (none for an unlimited meter).
        public var debits: [HoldSettlement.Debit]
        public var since: [CreditHold.BucketSince]
    }

    /// The most debits one spend posts that a reversal looks for (`<key>:0` …): more than a meter has buckets.
    static let largestDebitCount = 64

    /// The spend `idempotencyKey` of `account`, with its debits and what their buckets became since (sql/0037's
    /// `credit_buckets_since`), if the key was used: its answer, then — for a spend charged and not given back — its
    /// ledger rows, found by the keys its answer's time names (``debitKeyPrefix(account:idempotencyKey:micros:)``).
    public func spendToReverse(of account: AccountID, idempotencyKey: String, on connection: PostgresConnection) async throws -> StoredSpend? {
        let answers = try await connection.query(
            """
            SELECT meter, amount, outcome, created_at, reversed_at, reversed_returned, reversed_lapsed, debits_at_micros,
                jsonb_typeof(answer->'remaining') = 'number'
            FROM usage_requests WHERE account_id = \(account.text) AND idempotency_key = \(idempotencyKey)
            """, logger: logger)
        var found: StoredSpend?
        for try await (meter, amount, outcome, spentAt, reversedAt, returned, lapsed, micros, counted) in answers.decode(
            (String, Int64, String, Date, Date?, Int64?, Int64?, Int64?, Bool?).self)
        {
            found = StoredSpend(
                meter: meter, amount: amount, spent: Answer.Outcome(rawValue: outcome) == .spent, spentAt: spentAt,
                reversal: reversedAt.map { Reversal(reversedAt: $0, returned: returned ?? 0, lapsed: lapsed ?? 0) },
                counted: counted ?? false,
                debitKeyPrefix: Self.debitKeyPrefix(account: account, idempotencyKey: idempotencyKey, micros: micros), micros: micros,
                debits: [], since: [])
        }
        // Only a counted spend took from buckets: an unlimited one under a key used again must not find the debits an
        // earlier spend under the key left under the plain keys.
        guard var spend = found, spend.spent, spend.counted, spend.reversal == nil else { return found }
        let keys = (0..<Self.largestDebitCount).map { "\(spend.debitKeyPrefix):\($0)" }
        let rows = try await connection.query(
            """
            SELECT (SELECT jsonb_agg(jsonb_build_object('bucket', l.bucket, 'amount', -l.delta) ORDER BY array_position(\(keys)::text[], l.operation_key))
                    FROM credit_ledger l WHERE l.operation_key = ANY(\(keys)::text[]))::text,
                credit_buckets_since(\(keys[0]), ARRAY(SELECT l.bucket FROM credit_ledger l WHERE l.operation_key = ANY(\(keys)::text[])))::text
            """, logger: logger)
        for try await (debitsText, sinceText) in rows.decode((String?, String?).self) {
            let decoder = JSONDecoder()
            do {
                // No rows (an unlimited meter's spend): no debits, and nothing to know of their buckets.
                spend.debits = try (debitsText.map { try decoder.decode([CreditHoldStore.StoredDebit].self, from: Data($0.utf8)) } ?? [])
                    .map { HoldSettlement.Debit(bucket: $0.bucket, amount: $0.amount) }
                spend.since = try sinceText.map { try decoder.decode([CreditHold.BucketSince].self, from: Data($0.utf8)) } ?? []
            } catch {
                throw PersistenceError(.corruptRecord, "a stored spend's ledger rows do not decode")
            }
        }
        return spend
    }

    /// The ledger key of what goes back to a bucket when a spend is given back: its debit's own key and `:reversed`
    /// (so an erasure moves it with the spend's rows).
    public static func reversalKey(debitKeyPrefix: String, index: Int) -> String {
        "\(debitKeyPrefix):\(index):reversed"
    }

    /// What names a reversal in the key of a claim's payment (CreditClaims): the digest of the spend's debit key (the
    /// app's key and, since sql/0049, the spend's time) and the debit's index. The payment's row is the account's
    /// bucket's (an erasure renames the bucket in it); the spend's own key, which names the account and holds the
    /// app's key, is not repeated in it.
    public static func reversalPayer(idempotencyKey: String, micros: Int64?, index: Int) -> String {
        let spend = micros.map { "\(idempotencyKey)@\($0)" } ?? idempotencyKey
        let digest = SHA256.hash(data: Data(spend.utf8)).prefix(16).map { String(format: "%02x", $0) }.joined()
        return "reversal:\(digest):\(index)"
    }

    /// Posts what goes back (reason `usage reversed`) and records the reversal, in one statement.
    public func recordReversal(
        _ reversal: Reversal, of account: AccountID, idempotencyKey: String, posting postings: [LedgerEntry], on connection: PostgresConnection
    ) async throws {
        let rows = try await connection.query(
            """
            WITH posted AS (
                INSERT INTO credit_ledger (operation_key, bucket, delta, reason, created_at)
                SELECT *, \(reversal.reversedAt)::timestamptz FROM unnest(\(postings.map(\.operationKey))::text[], \(postings.map(\.bucket))::text[],
                    \(postings.map(\.delta))::bigint[], \(postings.map(\.reason))::text[])
                ON CONFLICT (operation_key) DO NOTHING RETURNING operation_key
            ), reversed AS (
                UPDATE usage_requests SET reversed_at = \(reversal.reversedAt), reversed_returned = \(reversal.returned),
                    reversed_lapsed = \(reversal.lapsed)
                WHERE account_id = \(account.text) AND idempotency_key = \(idempotencyKey) AND reversed_at IS NULL
            )
            SELECT operation_key FROM posted
            """, logger: logger)
        for try await key in rows.decode(String.self) { CreditLedger.countPosted(key) }
    }
}
