import Entitlements
import Foundation
import Logging
import PostgresNIO
import Subscriptions

/// The answers given to Apple's Get Retention Message requests (`retention_decisions`, sql/0043) and the facts they
/// are chosen from.
public struct RetentionDecisions: Sendable {
    let logger: Logger

    public init(logger: Logger) { self.logger = logger }

    /// What the stored facts say of a subscription's customer at the moment of a request.
    public struct Reading: Sendable, Equatable {
        public var account: AccountID?
        public var productId: String
        public var environment: StoreEnvironment
        /// The largest share of a meter's credits spent in the billing period in force (`nil`: it credited nothing).
        public var spentShare: Double?
        /// The account's newest spend or hold.
        public var lastSpend: Date?
        /// The earliest of the subscription's first notification and when Storekeeper first stored it.
        public var firstSeen: Date
        public var topUpsBought: Int
        /// Promotional offers signed for the account, by offer id.
        public var offersSigned: [String: Int]
    }

    /// Bounds, for the rest of the caller's transaction, how long a statement may run and a lock be waited for: past
    /// `limit` PostgreSQL ends it and the connection goes back to the pool, whatever the caller's task does.
    public func limitWaits(to limit: Duration, on connection: PostgresConnection) async throws {
        let milliseconds = "\(max(1, limit.components.seconds * 1000 + limit.components.attoseconds / 1_000_000_000_000_000))ms"
        try await connection.query(
            "SELECT set_config('lock_timeout', \(milliseconds), true), set_config('statement_timeout', \(milliseconds), true)", logger: logger)
    }

    /// The facts of `originalTransactionId`'s customer, in one statement; `nil` when no App Store subscription of
    /// `environment` has that id.
    public func reading(of originalTransactionId: String, environment: StoreEnvironment?, on connection: PostgresConnection) async throws -> Reading?
    {
        // A request that names no environment matches no subscription.
        guard let environment else { return nil }
        let rows = try await connection.query(
            """
            SELECT s.account_id, s.product_id, s.environment,
                (SELECT max(used::float8 / credited) FROM (
                    SELECT sum(l.delta) FILTER (WHERE l.reason NOT IN (\(unescaped: CreditLedger.usageReasons), \(unescaped: CreditLedger.holdReasons))) AS credited,
                           coalesce(-sum(l.delta) FILTER (WHERE l.reason IN (\(unescaped: CreditLedger.usageReasons))), 0) AS used
                    FROM credit_buckets b JOIN credit_ledger l ON l.bucket = b.key
                    WHERE b.original_transaction_id = s.original_transaction_id AND b.billing_period = s.billing_period
                    GROUP BY b.meter) AS meters WHERE credited > 0),
                greatest(
                    (SELECT max(u.created_at) FROM usage_requests u WHERE u.account_id = s.account_id AND u.outcome = 'spent'),
                    (SELECT max(h.created_at) FROM credit_holds h WHERE h.account_id = s.account_id),
                    (SELECT l.spent_at FROM account_last_spends l WHERE l.account_id = s.account_id)),
                least(s.created_at, (
                    SELECT to_timestamp(n.signed_date / 1000.0) FROM notifications n
                    WHERE n.original_transaction_id = s.original_transaction_id ORDER BY n.signed_date LIMIT 1)),
                (SELECT count(*) FROM credit_ledger l JOIN credit_buckets b ON b.key = l.bucket
                    WHERE b.account_id = s.account_id AND b.kind = 'topup' AND starts_with(l.operation_key, 'topup:'))::int8,
                (SELECT coalesce(jsonb_object_agg(offer_id, n), '{}') FROM (
                    SELECT offer_id, count(*) AS n FROM offer_signatures o WHERE o.account_id = s.account_id GROUP BY offer_id) AS given)::text
            FROM subscriptions s
            WHERE s.original_transaction_id = \(originalTransactionId) AND s.environment = \(environment)
                AND coalesce(s.store, 'app_store') = 'app_store'
            """, logger: logger)
        for try await (account, product, environment, share, lastSpend, firstSeen, topUps, offers) in rows.decode(
            (String?, String, StoreEnvironment, Double?, Date?, Date, Int64, String).self)
        {
            let signed = (try? JSONDecoder().decode([String: Int].self, from: Data(offers.utf8))) ?? [:]
            return Reading(
                account: account.flatMap(AccountID.init), productId: product, environment: environment, spentShare: share,
                lastSpend: lastSpend, firstSeen: firstSeen, topUpsBought: Int(topUps), offersSigned: signed)
        }
        return nil
    }

    /// An answer given, as stored.
    public struct Decision: Sendable, Equatable {
        public var requestIdentifier: UUID
        public var originalTransactionId: String
        public var account: AccountID?
        public var environment: StoreEnvironment
        public var productId: String
        public var rule: String
        public var answerKind: String?
        /// The JSON body answered.
        public var answer: String?
        public var fallbackReason: String?
        public var signedDate: Int64
        public var decidedAt: Date

        public init(
            requestIdentifier: UUID, originalTransactionId: String, account: AccountID?, environment: StoreEnvironment, productId: String,
            rule: String, answerKind: String?, answer: String?, fallbackReason: String?, signedDate: Int64, decidedAt: Date
        ) {
            self.requestIdentifier = requestIdentifier
            self.originalTransactionId = originalTransactionId
            self.account = account
            self.environment = environment
            self.productId = productId
            self.rule = rule
            self.answerKind = answerKind
            self.answer = answer
            self.fallbackReason = fallbackReason
            self.signedDate = signedDate
            self.decidedAt = decidedAt
        }
    }

    /// Stores `decision` (without an account, under the subscription's when it has one); `false` when its request
    /// identifier was stored before (a replayed request).
    public func record(_ decision: Decision, on connection: PostgresConnection) async throws -> Bool {
        let rows = try await connection.query(
            """
            INSERT INTO retention_decisions (request_identifier, original_transaction_id, account_id, environment, product_id, rule,
                answer_kind, answer, fallback_reason, signed_date, decided_at)
            VALUES (\(decision.requestIdentifier), \(decision.originalTransactionId),
                coalesce(\(decision.account?.text), (SELECT account_id FROM subscriptions WHERE original_transaction_id = \(decision.originalTransactionId))),
                \(decision.environment),
                \(decision.productId), \(decision.rule), \(decision.answerKind), \(decision.answer)::jsonb, \(decision.fallbackReason),
                \(decision.signedDate), \(decision.decidedAt))
            ON CONFLICT (request_identifier) DO NOTHING RETURNING 1
            """, logger: logger)
        for try await _ in rows { return true }
        return false
    }

    /// One rule's answers since an instant: how many, to how many known subscriptions, and how many of those still
    /// renew. The default is counted apart by why it was given (no rule held, an unknown subscription, late, failed).
    public struct RuleCount: Sendable, Equatable {
        public var rule: String
        public var answerKind: String?
        public var fallbackReason: String?
        public var answers: Int
        /// Subscriptions Storekeeper knows that the rule answered.
        public var subscriptions: Int
        /// Of those, the ones whose access goes on and that still renew.
        public var stayed: Int
    }

    /// Each rule's answers since `since`, the most used first. A subscription answered by several rules counts for
    /// each; "stayed" is judged now, by the subscription's status.
    public func ruleCounts(since: Date, on connection: PostgresConnection) async throws -> [RuleCount] {
        let rows = try await connection.query(
            """
            SELECT d.rule, d.answer_kind, d.fallback_reason, count(*)::int8, count(DISTINCT s.original_transaction_id)::int8,
                count(DISTINCT s.original_transaction_id) FILTER (
                    WHERE s.will_renew AND s.status IN ('active', 'grace_period', 'billing_retry'))::int8
            FROM retention_decisions d LEFT JOIN subscriptions s ON s.original_transaction_id = d.original_transaction_id
            WHERE d.decided_at >= \(since)
            GROUP BY d.rule, d.answer_kind, d.fallback_reason ORDER BY count(*) DESC, d.rule, d.fallback_reason
            """, logger: logger)
        var counts: [RuleCount] = []
        for try await (rule, kind, reason, answers, subscriptions, stayed) in rows.decode((String, String?, String?, Int64, Int64, Int64).self) {
            counts.append(
                RuleCount(
                    rule: rule, answerKind: kind, fallbackReason: reason, answers: Int(answers), subscriptions: Int(subscriptions),
                    stayed: Int(stayed)))
        }
        return counts
    }
}
