import Entitlements
import Foundation
import Logging
import PostgresNIO

/// The support console's search: which accounts an id a customer or the app gives names — an account id, an App
/// Store transaction or original transaction id, a Stripe subscription, customer, invoice, charge or payment id, a
/// purchase token the app asked for.
public struct AccountSearch: Sendable {
    /// One account the text names, and how.
    public struct Match: Sendable, Equatable {
        public var accountId: String
        /// `account`, `subscription`, `transaction`, `purchase`, `stripe_customer`, `stripe_object`, `purchase_intent`.
        public var matchedBy: String
        /// The subscription or purchase the text led through, if any.
        public var source: String?

        public init(accountId: String, matchedBy: String, source: String?) {
            self.accountId = accountId
            self.matchedBy = matchedBy
            self.source = source
        }
    }

    private let client: PostgresClient
    private let logger: Logger

    public init(client: PostgresClient, logger: Logger) {
        self.client = client
        self.logger = logger
    }

    /// Files every transaction id of `subscription` (Stripe: its invoices) for the search, on the caller's
    /// transaction; ids filed before are left as they are.
    public static func file(transactions ids: [String], ofSubscription subscription: String, on connection: PostgresConnection, logger: Logger)
        async throws
    {
        guard !ids.isEmpty else { return }
        try await connection.query(
            """
            INSERT INTO subscription_transactions (transaction_id, original_transaction_id)
            SELECT id, \(subscription) FROM unnest(\(ids)::text[]) AS id ON CONFLICT (transaction_id) DO NOTHING
            """, logger: logger)
    }

    /// Every account `text` names (at most `limit`), each once, the most direct way first. Each branch is an index
    /// lookup (sql/0027).
    public func matches(_ text: String, limit: Int = 20) async throws -> [Match] {
        // Account ids are held in lower case (`AccountID`); one copied from a log or an iOS device is often upper case.
        let text = UUID.canonicalText(of: text) ?? text
        let rows = try await client.fencedQuery(
            """
            WITH found AS (
                SELECT account_id, 'account' AS matched_by, NULL::text AS source, 1 AS rank FROM subscriptions WHERE account_id = \(text)
                UNION ALL SELECT account_id, 'account', NULL, 1 FROM entitlement_sources WHERE account_id = \(text)
                UNION ALL SELECT account_id, 'account', NULL, 1 FROM credit_buckets WHERE account_id = \(text)
                UNION ALL SELECT account_id, 'account', NULL, 1 FROM events WHERE account_id = \(text)
                UNION ALL SELECT account_id, 'subscription', original_transaction_id, 2 FROM subscriptions WHERE original_transaction_id = \(text)
                UNION ALL SELECT s.account_id, 'transaction', s.original_transaction_id, 3
                    FROM subscription_transactions t JOIN subscriptions s ON s.original_transaction_id = t.original_transaction_id
                    WHERE t.transaction_id = \(text)
                UNION ALL SELECT s.account_id, 'transaction', s.original_transaction_id, 3
                    FROM subscription_events e JOIN subscriptions s ON s.original_transaction_id = e.original_transaction_id
                    WHERE e.transaction_id = \(text)
                UNION ALL SELECT account_id, 'purchase', id, 3 FROM entitlement_sources WHERE id = \(text) AND kind = 'purchase'
                UNION ALL SELECT account_id, 'stripe_subscription', subscription_id, 2 FROM stripe_links WHERE subscription_id = \(text)
                UNION ALL SELECT s.account_id, 'stripe_object', o.subscription_id, 3
                    FROM stripe_objects o JOIN subscriptions s ON s.original_transaction_id = o.subscription_id WHERE o.id = \(text)
                UNION ALL SELECT s.account_id, 'stripe_customer', o.subscription_id, 4
                    FROM stripe_objects o JOIN subscriptions s ON s.original_transaction_id = o.subscription_id
                    WHERE o.object = 'subscription' AND o.body->>'customer' = \(text)
                UNION ALL SELECT s.account_id, 'purchase_token', s.original_transaction_id, 2
                    FROM google_subscriptions g JOIN subscriptions s ON s.original_transaction_id = ANY(g.tokens) AND s.store = 'google_play'
                    WHERE g.tokens @> ARRAY[\(text)::text]
                UNION ALL SELECT e.account_id, 'google_purchase', e.id, 2
                    FROM google_products p JOIN entitlement_sources e ON e.id = coalesce(p.order_id, p.purchase_token)
                    WHERE p.purchase_token = \(text) OR p.order_id = \(text)
                UNION ALL SELECT b.account_id, 'google_purchase', coalesce(p.order_id, p.purchase_token), 2
                    FROM google_products p JOIN credit_ledger l ON l.operation_key = 'topup:' || coalesce(p.order_id, p.purchase_token)
                    JOIN credit_buckets b ON b.key = l.bucket
                    WHERE p.purchase_token = \(text) OR p.order_id = \(text)
                UNION ALL SELECT account_id, 'purchase_intent', NULL, 4 FROM purchase_intents WHERE token = \(UUID(text: text))
            )
            SELECT DISTINCT ON (account_id) account_id, matched_by, source FROM found WHERE account_id IS NOT NULL
            ORDER BY account_id, rank LIMIT \(limit)
            """, logger: logger)
        var matches: [Match] = []
        for try await (account, matchedBy, source) in rows.decode((String, String, String?).self) {
            matches.append(Match(accountId: account, matchedBy: matchedBy, source: source))
        }
        return matches
    }
}
