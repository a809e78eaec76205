import Foundation
import PostgresNIO
import StripeStore
import Subscriptions

// What erasure does to Stripe's stored objects and events: one use case, apart from the rest of ``ErasedAccounts``.
extension ErasedAccounts {
    /// Stripe's objects of the account and the events that carried them, scrubbed (`stripe_object_scrubbed`, sql/0065):
    /// the id becomes the pseudonym wherever it is a whole string, Stripe's contact fields go and every `metadata` keeps
    /// only the keys Storekeeper reads, at any depth (the app's own may say who the customer is;
    /// `storekeeper_account_id` still names the holder, now the pseudonym, so `replay` derives the same one).
    ///
    /// The account's objects are those it is the holder of, by Storekeeper's own order (docs/stripe.md): the objects of
    /// the subscriptions it holds or held or an app linked to it; its Checkout Sessions (`client_reference_id`, else
    /// `metadata.storekeeper_account_id`) and the objects of their subscriptions, and of subscriptions whose metadata
    /// names it, that no other account holds (a price the catalogue does not sell is filed without a holder); its
    /// one-time payments' charges and disputes (by PaymentIntent). Events go with their object, or with their
    /// subscription. Another account's objects are not scrubbed, though they share the Stripe customer (one person, two
    /// accounts); in another account's Checkout Session or subscription whose metadata holds the id (a referral), the
    /// subscription's other objects (an invoice copies its metadata) and their events, only that value becomes the
    /// pseudonym.
    func scrubStripeObjects(of held: [String], from account: AccountID, to pseudonym: AccountID, on connection: PostgresConnection) async throws
        -> Int
    {
        let (from, to) = (account.text, pseudonym.text)
        let accountKey = StripeSubscription.accountMetadataKey
        var ids: [String] = []
        var (mentioning, mentionedSubscriptions): ([String], [String]) = ([], [])
        // Each arm of the account's own an index lookup (sql/0066's, stripe_objects_subscription, the primary key); the
        // mentions read every session and subscription (not invoices, the bulk of the table).
        for try await (id, owned, subscription) in try await connection.query(
            """
            WITH sessions AS (
                SELECT id, subscription_id, body FROM stripe_objects WHERE object = 'checkout.session' AND body->>'client_reference_id' = \(from)
                UNION SELECT id, subscription_id, body FROM stripe_objects
                WHERE object = 'checkout.session' AND body->'metadata'->>\(accountKey) = \(from) AND body->>'client_reference_id' IS NULL
            ), unheld AS (
                SELECT subscription FROM (
                    SELECT body->>'subscription' AS subscription FROM sessions
                    UNION SELECT id FROM stripe_objects WHERE object = 'subscription' AND body->'metadata'->>\(accountKey) = \(from)
                ) AS named
                WHERE subscription IS NOT NULL AND NOT EXISTS (
                    SELECT 1 FROM subscriptions s WHERE s.original_transaction_id = named.subscription AND s.account_id <> \(to))
            ), holdings AS (
                SELECT unnest(\(held)::text[]) AS subscription
                UNION SELECT subscription_id FROM stripe_links WHERE account_id = \(to)
                UNION SELECT subscription FROM unheld
            ), owned AS (
                SELECT id FROM sessions
                UNION SELECT o.id FROM holdings JOIN stripe_objects o ON o.subscription_id = holdings.subscription
                UNION SELECT o.id FROM sessions
                    JOIN stripe_objects o ON o.body->>'payment_intent' = sessions.body->>'payment_intent' AND o.subscription_id IS NULL
                        AND o.object IN ('charge', 'dispute')
                WHERE sessions.subscription_id IS NULL AND sessions.body->>'payment_intent' IS NOT NULL
            )
            SELECT id, true, NULL::text FROM owned
            UNION ALL SELECT id, false, CASE WHEN object = 'subscription' THEN id END FROM stripe_objects
            WHERE object IN ('checkout.session', 'subscription') AND id NOT IN (SELECT id FROM owned)
                AND jsonb_path_exists(body->'metadata', '$.* ? (@ == $id)', jsonb_build_object('id', \(from)::text))
            """, logger: logger
        ).decode((String, Bool, String?).self) {
            if owned { ids.append(id) } else { mentioning.append(id) }
            if let subscription { mentionedSubscriptions.append(subscription) }
        }
        // Another account's session or subscription whose metadata holds the id (a referral), the invoices that copy a
        // subscription's metadata, and their events: the id becomes the pseudonym, nothing else changes.
        _ = try await count(
            connection,
            """
            UPDATE stripe_objects SET body = read.body
            FROM (SELECT id, jsonb_replace_string(body, \(from), \(to)) AS body, body AS was FROM stripe_objects
                  WHERE (id = ANY(\(mentioning)) OR subscription_id = ANY(\(mentionedSubscriptions))) AND id <> ALL(\(ids))) AS read
            WHERE stripe_objects.id = read.id AND read.body <> read.was
            """)
        _ = try await count(
            connection,
            """
            UPDATE stripe_events SET body = convert_to(read.body::text, 'UTF8')
            FROM (SELECT id, jsonb_replace_string(received, \(from), \(to)) AS body, received
                  FROM (SELECT id, convert_from(body, 'UTF8')::jsonb AS received FROM stripe_events
                        WHERE id IN (SELECT id FROM stripe_events WHERE object_id = ANY(\(mentioning))
                                     UNION SELECT id FROM stripe_events WHERE subscription_id = ANY(\(mentionedSubscriptions)))) AS events) AS read
            WHERE stripe_events.id = read.id AND read.body <> read.received
            """)
        // Counted where something changed: an erasure repeated finds its objects scrubbed already (erased again, nothing
        // moved: `alreadyErased`).
        let objects = try await count(
            connection,
            """
            UPDATE stripe_objects SET body = read.body
            FROM (SELECT id, stripe_object_scrubbed(body, \(from), \(to)) AS body, body AS was FROM stripe_objects WHERE id = ANY(\(ids))) AS read
            WHERE stripe_objects.id = read.id AND read.body <> read.was
            """)
        // The events' bodies are Stripe's JSON as received (bytes), rewritten as JSON where they change.
        _ = try await count(
            connection,
            """
            UPDATE stripe_events SET body = convert_to(read.body::text, 'UTF8')
            FROM (SELECT id, stripe_object_scrubbed(received, \(from), \(to)) AS body, received
                  FROM (SELECT id, convert_from(body, 'UTF8')::jsonb AS received FROM stripe_events
                        WHERE id IN (
                            SELECT id FROM stripe_events WHERE object_id = ANY(\(ids))
                            UNION SELECT e.id FROM stripe_objects o JOIN stripe_events e ON e.subscription_id = o.subscription_id
                            WHERE o.id = ANY(\(ids)) AND o.subscription_id IS NOT NULL)) AS events) AS read
            WHERE stripe_events.id = read.id AND read.body <> read.received
            """)
        return objects
    }
}
