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
        /// What it took from each bucket, in spend order (none for an unlimited meter).
        public var debits: [HoldSettlement.Debit]
        public var since: [CreditHold.BucketSince]
    }

    /// The most debits one spend posts that a reversal looks for (`<key>:0` …): more than a meter has buckets.
    static let largestDebitCount = 64

    /// The spend `idempotencyKey` of `account`, with its debits and what their buckets became since (sql/0037's
    /// `credit_buckets_since`), if the key was used.
    public func spendToReverse(of account: AccountID, idempotencyKey: String, on connection: PostgresConnection) async throws -> StoredSpend? {
        let prefix = Self.spendKey(account: account, idempotencyKey: idempotencyKey)
        let keys = (0..<Self.largestDebitCount).map { "\(prefix):\($0)" }
        let rows = try await connection.query(
            """
            SELECT u.meter, u.amount, u.outcome, u.created_at, u.reversed_at, u.reversed_returned, u.reversed_lapsed,
                (SELECT jsonb_agg(jsonb_build_object('bucket', l.bucket, 'amount', -l.delta) ORDER BY array_position(\(keys)::text[], l.operation_key))
                 FROM credit_ledger l WHERE l.operation_key = ANY(\(keys)::text[]))::text,
                credit_buckets_since(\(keys[0]), ARRAY(SELECT l.bucket FROM credit_ledger l WHERE l.operation_key = ANY(\(keys)::text[])))::text
            FROM usage_requests u WHERE u.account_id = \(account.text) AND u.idempotency_key = \(idempotencyKey)
            """, logger: logger)
        for try await row in rows {
            let (meter, amount, outcome, spentAt, reversedAt, returned, lapsed, debitsText, sinceText) = try row.decode(
                (String, Int64, String, Date, Date?, Int64?, Int64?, String?, String?).self)
            let decoder = JSONDecoder()
            let debits: [CreditHoldStore.StoredDebit]
            let since: [CreditHold.BucketSince]
            do {
                // No rows (an unlimited meter's spend): no debits, and nothing to know of their buckets.
                debits = try debitsText.map { try decoder.decode([CreditHoldStore.StoredDebit].self, from: Data($0.utf8)) } ?? []
                since = try sinceText.map { try decoder.decode([CreditHold.BucketSince].self, from: Data($0.utf8)) } ?? []
            } catch {
                throw PersistenceError(.corruptRecord, "a stored spend's ledger rows do not decode")
            }
            return StoredSpend(
                meter: meter, amount: amount, spent: Answer.Outcome(rawValue: outcome) == .spent, spentAt: spentAt,
                reversal: reversedAt.map { Reversal(reversedAt: $0, returned: returned ?? 0, lapsed: lapsed ?? 0) },
                debits: debits.map { HoldSettlement.Debit(bucket: $0.bucket, amount: $0.amount) }, since: since)
        }
        return nil
    }

    /// The ledger key of what goes back to a bucket when a spend is given back: the spend's own key and `:reversed`
    /// (so an erasure moves it with the spend's rows).
    public static func reversalKey(account: AccountID, idempotencyKey: String, index: Int) -> String {
        "\(spendKey(account: account, idempotencyKey: idempotencyKey)):\(index):reversed"
    }

    /// What names a reversal in the key of a claim's payment (CreditClaims): the digest of the spend's key and the
    /// debit's index. The payment's row is the account's bucket's (an erasure renames the bucket in it); the spend's
    /// own key, which names the account and holds the app's key, is not repeated in it.
    public static func reversalPayer(idempotencyKey: String, index: Int) -> String {
        let digest = SHA256.hash(data: Data(idempotencyKey.utf8)).prefix(16).map { String(format: "%02x", $0) }.joined()
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
