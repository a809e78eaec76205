import Foundation
import PostgresNIO
import StripeStore
import Subscriptions

// What erasure does to Stripe's stored objects and events: one use case, apart from the rest of ``ErasedAccounts``.
extension ErasedAccounts {
    /// Stripe's objects of the account — those of the subscriptions it holds or held, or that an app linked to it, its
    /// Checkout Sessions (`client_reference_id`, or `metadata.storekeeper_account_id`) and the charges and disputes of
    /// its one-time payments (by their PaymentIntent) — and the stored events of those objects: the id becomes the
    /// pseudonym wherever it is a whole string, the contact fields go, and of `metadata` only the keys Storekeeper
    /// reads stay (the app's own may say who the customer is; `storekeeper_account_id` still names the owner, now the
    /// pseudonym, so `replay` derives the same holder). Another account's objects stay as they are, though they share
    /// the Stripe customer (one person, two accounts); in another account's Checkout Session whose metadata holds the
    /// id (a referral), and in its events, only that value becomes the pseudonym.
    func scrubStripeObjects(of held: [String], from account: AccountID, to pseudonym: AccountID, on connection: PostgresConnection) async throws
        -> Int
    {
        let (from, to) = (account.text, pseudonym.text)
        let accountKey = StripeSubscription.accountMetadataKey
        var (ids, mentioning): ([String], [String]) = ([], [])
        for try await (id, owned) in try await connection.query(
            """
            WITH named AS (
                SELECT id, object, subscription_id, body FROM stripe_objects
                WHERE subscription_id = ANY(\(held)) OR subscription_id IN (SELECT subscription_id FROM stripe_links WHERE account_id = \(to))
                    OR (object = 'checkout.session' AND (body->>'client_reference_id' = \(from) OR body->'metadata'->>\(accountKey) = \(from)))
            ), payments AS (
                SELECT DISTINCT body->>'payment_intent' AS payment_intent FROM named
                WHERE object = 'checkout.session' AND subscription_id IS NULL AND body->>'payment_intent' IS NOT NULL
            )
            SELECT id, true FROM named
            UNION SELECT id, true FROM stripe_objects
            WHERE object IN ('charge', 'dispute') AND subscription_id IS NULL AND body->>'payment_intent' IN (SELECT payment_intent FROM payments)
            UNION SELECT id, false FROM stripe_objects
            WHERE object = 'checkout.session' AND id NOT IN (SELECT id FROM named)
                AND jsonb_replace_string(body->'metadata', \(from), '') <> body->'metadata'
            """, logger: logger
        ).decode((String, Bool).self) {
            if owned { ids.append(id) } else { mentioning.append(id) }
        }
        _ = try await count(
            connection, "UPDATE stripe_objects SET body = jsonb_replace_string(body, \(from), \(to)) WHERE id = ANY(\(mentioning))")
        _ = try await count(
            connection,
            """
            UPDATE stripe_events SET body = convert_to(read.body::text, 'UTF8')
            FROM (SELECT id, convert_from(body, 'UTF8')::jsonb AS was,
                      jsonb_replace_string(convert_from(body, 'UTF8')::jsonb, \(from), \(to)) AS body
                  FROM stripe_events WHERE object_id = ANY(\(mentioning))) AS read
            WHERE stripe_events.id = read.id AND read.body <> read.was
            """)
        var binds = PostgresBindings()
        binds.append(ids)
        binds.append(from)
        binds.append(to)
        let objects = try await count(
            connection,
            PostgresQuery(
                unsafeSQL: """
                    UPDATE stripe_objects SET body = \(Self.scrubbed("read.body"))
                    FROM (SELECT id, jsonb_replace_string(body, $2, $3) AS body FROM stripe_objects WHERE id = ANY($1)) AS read
                    WHERE stripe_objects.id = read.id
                    """, binds: binds))
        // The events' bodies are Stripe's JSON as received (bytes): the id goes from all of it, and their object (and what
        // it was before the change, `previous_attributes`) is scrubbed the same way.
        _ = try await count(
            connection,
            PostgresQuery(
                unsafeSQL: """
                    UPDATE stripe_events SET body = convert_to(jsonb_set(
                        CASE WHEN jsonb_typeof(b->'data'->'previous_attributes') = 'object'
                            THEN jsonb_set(b, '{data,previous_attributes}', \(Self.scrubbed("(b->'data'->'previous_attributes')"))) ELSE b END,
                        '{data,object}', \(Self.scrubbed("(b->'data'->'object')")))::text, 'UTF8')
                    FROM (SELECT id AS event, jsonb_replace_string(convert_from(body, 'UTF8')::jsonb, $2, $3) AS b
                          FROM stripe_events WHERE object_id = ANY($1)) AS read
                    WHERE stripe_events.id = read.event AND jsonb_typeof(b->'data'->'object') = 'object'
                    """, binds: binds))
        return objects
    }

    /// `object` (SQL of a JSON object, the id already replaced) without Stripe's contact fields, and with only the
    /// `metadata` keys Storekeeper reads, where it has `metadata`.
    static func scrubbed(_ object: String) -> String {
        let kept = [StripeSubscription.accountMetadataKey, StripeSubscription.productMetadataKey].map { "'\($0)'" }.joined(separator: ", ")
        let contacts = [
            "customer_email", "customer_name", "customer_phone", "customer_address", "customer_shipping", "customer_details", "billing_details",
            "receipt_email", "shipping", "shipping_details",
        ].map { " - '\($0)'" }.joined()
        return """
            ((\(object)\(contacts)) || CASE WHEN \(object) ? 'metadata' THEN jsonb_build_object('metadata', coalesce(
                (SELECT jsonb_object_agg(m.key, m.value) FROM jsonb_each(CASE WHEN jsonb_typeof(\(object)->'metadata') = 'object'
                    THEN \(object)->'metadata' ELSE '{}'::jsonb END) AS m WHERE m.key IN (\(kept))), '{}'::jsonb)) ELSE '{}'::jsonb END)
            """
    }
}
