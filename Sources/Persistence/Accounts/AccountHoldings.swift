import Credits
import Logging
import PostgresNIO
import Subscriptions

/// Every row Storekeeper holds about an account, as one JSON object by kind (the account export's `holdings`): its
/// subscriptions and their transactions, the notifications about them (the signed parts left out) and the claims and
/// ends that are its or nobody's (another account's, of a subscription that moved, are that account's),
/// entitlement sources, credit buckets and ledger, usage, holds, purchase intents, consent, refund requests, offer
/// signatures, retention decisions, consent rescissions, Stripe links, objects and the events Stripe sent about them
/// (the erasure's rule, sql/0075), Google Play claims, reads, products and notifications, webhook deliveries and
/// operator actions. Events are the event log's to read.
public struct AccountHoldings: Sendable {
    let logger: Logger

    public init(logger: Logger) { self.logger = logger }

    /// The object as JSON text; every list empty (and `consent` null) for an account nothing names.
    public func holdings(of account: AccountID, on connection: PostgresConnection) async throws -> String {
        // The keys' own builders with an empty key: the exact prefix of the account's spends and adjustments.
        let (spent, adjusted) = (
            UsageRequests.spendKey(account: account, idempotencyKey: ""), CreditAdjustment.operationKey(account: account, key: "")
        )
        let rows = try await connection.query(
            """
            WITH owned AS (SELECT original_transaction_id FROM subscriptions WHERE account_id = \(account.text)),
            buckets AS (
                SELECT * FROM credit_buckets WHERE account_id = \(account.text)
                UNION SELECT b.* FROM credit_buckets b JOIN owned o ON o.original_transaction_id = b.original_transaction_id),
            -- Stripe's objects and events of the account: the erasure's rule (sql/0075), so what an export shows is what an
            -- erasure scrubs.
            stripe AS (
                SELECT found, object_id FROM stripe_objects_of_account(\(account.text), \(account.text), ARRAY(
                    SELECT original_transaction_id FROM owned
                    UNION SELECT id FROM entitlement_sources WHERE account_id = \(account.text) AND kind = 'purchase'))),
            -- The rows of its buckets and its subscriptions', but another account's spends and adjustments there (a
            -- subscription that came to it from another account holds the other's spends, keyed by the other's id and
            -- key); and its own in a subscription it no longer holds (its spends before a transfer).
            ledger AS (
                SELECT l.* FROM credit_ledger l JOIN buckets b ON b.key = l.bucket
                WHERE NOT (starts_with(l.operation_key, 'spend:') AND NOT starts_with(l.operation_key, \(spent)))
                    AND NOT (starts_with(l.operation_key, 'adjust:') AND NOT starts_with(l.operation_key, \(adjusted)))
                UNION SELECT l.* FROM credit_ledger l JOIN credit_buckets b ON b.key = l.bucket
                WHERE b.original_transaction_id IN (SELECT original_transaction_id FROM account_transfers WHERE from_account = \(account.text))
                    AND (starts_with(l.operation_key, \(spent)) OR starts_with(l.operation_key, \(adjusted)))),
            play_chains AS (
                SELECT g.* FROM google_subscriptions g
                WHERE g.id IN (SELECT original_transaction_id FROM owned) OR g.tokens && (SELECT array_agg(original_transaction_id) FROM owned)),
            play_products AS (
                SELECT p.* FROM google_products p
                WHERE p.account_token = \(account.text)
                   OR coalesce(p.order_id, p.purchase_token) IN (SELECT id FROM entitlement_sources WHERE account_id = \(account.text))
                   OR 'topup:' || coalesce(p.order_id, p.purchase_token) IN (
                       SELECT l.operation_key FROM credit_ledger l JOIN credit_buckets b ON b.key = l.bucket
                       WHERE b.account_id = \(account.text) AND l.operation_key LIKE 'topup:%'))
            SELECT jsonb_build_object(
                'subscriptions', (SELECT coalesce(jsonb_agg(to_jsonb(s)), '[]') FROM subscriptions s WHERE s.account_id = \(account.text)),
                'transactions', (SELECT coalesce(jsonb_agg(to_jsonb(t)), '[]') FROM subscription_transactions t JOIN owned USING (original_transaction_id)),
                'notifications', (SELECT coalesce(jsonb_agg(to_jsonb(n) - 'signed_parts' ORDER BY n.signed_date), '[]')
                                  FROM notifications n JOIN owned USING (original_transaction_id)),
                'claimsAndServerSnapshots', (SELECT coalesce(jsonb_agg(to_jsonb(e) ORDER BY e.signed_date), '[]')
                                  FROM subscription_events e WHERE e.account_id = \(account.text)
                                     OR (e.account_id IS NULL AND e.original_transaction_id IN (SELECT original_transaction_id FROM owned))),
                'archive', (SELECT coalesce(jsonb_agg(to_jsonb(a)), '[]') FROM subscription_archive a
                            WHERE a.account_id = \(account.text)
                               OR (a.account_id IS NULL AND a.original_transaction_id IN (SELECT original_transaction_id FROM owned))),
                'entitlementSources', (SELECT coalesce(jsonb_agg(to_jsonb(e)), '[]') FROM entitlement_sources e WHERE e.account_id = \(account.text)),
                'creditBuckets', (SELECT coalesce(jsonb_agg(to_jsonb(b)), '[]') FROM buckets b),
                'creditLedger', (SELECT coalesce(jsonb_agg(to_jsonb(l) ORDER BY l.id), '[]') FROM ledger l),
                'usageRequests', (SELECT coalesce(jsonb_agg(to_jsonb(u)), '[]') FROM usage_requests u WHERE u.account_id = \(account.text)),
                'lastSpendBeforeWindow', (SELECT to_jsonb(s) FROM account_last_spends s WHERE s.account_id = \(account.text)),
                'creditHolds', (SELECT coalesce(jsonb_agg(to_jsonb(h) ORDER BY h.created_at), '[]') FROM credit_holds h WHERE h.account_id = \(account.text)),
                'purchaseIntents', (SELECT coalesce(jsonb_agg(to_jsonb(p)), '[]') FROM purchase_intents p WHERE p.account_id = \(account.text)),
                'consent', (SELECT to_jsonb(c) FROM consumption_consents c WHERE c.account_id = \(account.text)),
                'refundRequests', (SELECT coalesce(jsonb_agg(to_jsonb(r) - 'review_token'), '[]') FROM refund_requests r WHERE r.account_id = \(account.text)),
                'offerSignatures', (SELECT coalesce(jsonb_agg(to_jsonb(o)), '[]') FROM offer_signatures o WHERE o.account_id = \(account.text)),
                'retentionDecisions', (SELECT coalesce(jsonb_agg(to_jsonb(r) ORDER BY r.decided_at), '[]') FROM retention_decisions r WHERE r.account_id = \(account.text)),
                'consentRescissions', (SELECT coalesce(jsonb_agg(to_jsonb(c) ORDER BY c.rescinded_at), '[]') FROM consent_rescissions c WHERE c.account_id = \(account.text)),
                'stripeLinks', (SELECT coalesce(jsonb_agg(to_jsonb(k)), '[]') FROM stripe_links k WHERE k.account_id = \(account.text)),
                'stripeObjects', (SELECT coalesce(jsonb_agg(to_jsonb(o) ORDER BY o.read_at, o.id), '[]') FROM stripe_objects o
                                  WHERE o.id IN (SELECT object_id FROM stripe WHERE found = 'owned')),
                'stripeEvents', (SELECT coalesce(jsonb_agg(to_jsonb(e) - 'body' || jsonb_build_object('body', convert_from(e.body, 'UTF8')::jsonb)
                                                           ORDER BY e.created_at, e.id), '[]')
                                 FROM stripe_events e
                                 WHERE e.id IN (SELECT id FROM stripe_events WHERE object_id IN (SELECT object_id FROM stripe WHERE found = 'owned')
                                                UNION SELECT id FROM stripe_events WHERE subscription_id IN (SELECT object_id FROM stripe WHERE found = 'holding'))),
                'googlePlayClaims', (SELECT coalesce(jsonb_agg(to_jsonb(c)), '[]') FROM google_purchase_claims c WHERE c.account_id = \(account.text)),
                'googlePlaySubscriptions', (SELECT coalesce(jsonb_agg(to_jsonb(g)), '[]') FROM play_chains g),
                'googlePlayReads', (SELECT coalesce(jsonb_agg(jsonb_build_object('purchaseToken', r.purchase_token, 'readAt', r.read_at,
                                        'read', convert_from(r.body, 'UTF8')::jsonb) ORDER BY r.read_at), '[]')
                                    FROM google_subscription_reads r JOIN play_chains g ON r.purchase_token = ANY(g.tokens)),
                'googlePlayProducts', (SELECT coalesce(jsonb_agg(jsonb_build_object('purchaseToken', p.purchase_token, 'readAt', p.read_at,
                                           'read', convert_from(p.body, 'UTF8')::jsonb) ORDER BY p.read_at), '[]')
                                       FROM play_products p),
                'googlePlayNotifications', (SELECT coalesce(jsonb_agg(to_jsonb(n) - 'body' || jsonb_build_object('body', convert_from(n.body, 'UTF8')::jsonb)
                                                                ORDER BY n.received_at, n.message_id), '[]')
                                            FROM google_notifications n
                                            WHERE n.purchase_token IN (SELECT unnest(tokens) FROM play_chains UNION SELECT purchase_token FROM play_products)),
                'webhookDeliveries', (SELECT coalesce(jsonb_agg(to_jsonb(d)), '[]') FROM webhook_deliveries d WHERE d.account_id = \(account.text)),
                'operatorActions', (SELECT coalesce(jsonb_agg(to_jsonb(a) ORDER BY a.id), '[]') FROM operator_actions a WHERE a.account_id = \(account.text))
            )::text
            """, logger: logger)
        for try await text in rows.decode(String.self) { return text }
        return "{}"
    }
}
