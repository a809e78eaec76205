import Foundation
import PostgresNIO
import Subscriptions

// What erasure does to Stripe's stored objects and events: one use case, apart from the rest of ``ErasedAccounts``.
extension ErasedAccounts {
    /// Stripe's objects of the account and the events that carried them, scrubbed (`stripe_object_scrubbed`, sql/0065,
    /// sql/0073): the id becomes the pseudonym where it names the holder (`client_reference_id`,
    /// `metadata.storekeeper_account_id`), not in Stripe's own fields however equal (a status, a currency, a price's
    /// id); Stripe's contact fields go and every `metadata` keeps only the keys Storekeeper reads, at any depth (the
    /// app's own may say who the customer is; `storekeeper_account_id`, now the pseudonym, lets `replay` derive the same
    /// holder).
    ///
    /// The account's objects are those it is the holder of, by Storekeeper's own order (docs/stripe.md): the objects of
    /// the subscriptions it holds or held or an app linked to it; its Checkout Sessions (`client_reference_id`, else
    /// `metadata.storekeeper_account_id`) and the objects of their subscriptions, and of subscriptions whose metadata
    /// names it, that no other account holds (a price the catalogue does not sell is filed without a holder); its
    /// one-time payments' charges and disputes (by PaymentIntent). Events go with their object, or with their
    /// subscription. Another account's objects are not scrubbed, though they share the Stripe customer (one person, two
    /// accounts); in another account's Checkout Session or subscription whose metadata holds the id (a referral; not
    /// `storekeeper_product_id`, a price's id), the subscription's other objects (an invoice copies its metadata) and their
    /// events, only that value becomes the pseudonym. A UUID id is matched in any case (sql/0073).
    func scrubStripeObjects(of held: [String], from account: AccountID, to pseudonym: AccountID, on connection: PostgresConnection) async throws
        -> Int
    {
        let (from, to) = (account.text, pseudonym.text)
        var found: [Found: [String]] = [:]
        // The account's own are `stripe_objects_of_account`'s (sql/0075, the export's too), found by index; the mentions
        // read every session and subscription (not the invoices, the bulk of the table).
        for try await (kind, id) in try await connection.query(
            """
            WITH own AS (SELECT found, object_id FROM stripe_objects_of_account(\(from), \(to), \(held)::text[])
            ), mentions AS (
                SELECT id, object FROM stripe_objects
                WHERE object IN ('checkout.session', 'subscription') AND id NOT IN (SELECT object_id FROM own WHERE found = 'owned')
                    AND stripe_metadata_mentions(body->'metadata', \(from))
            )
            SELECT found, object_id FROM own
            UNION ALL SELECT 'mention', id FROM mentions
            UNION ALL SELECT 'mentionedSubscription', id FROM mentions WHERE object = 'subscription'
            """, logger: logger
        ).decode((String, String).self) {
            if let kind = Found(rawValue: kind) { found[kind, default: []].append(id) }
        }
        // Another account's session or subscription whose metadata holds the id (a referral), the invoices that copy a
        // subscription's metadata, and their events: such a metadata value becomes the pseudonym, nothing else changes
        // (not a product's key, not a price whose id is the same text).
        _ = try await rewrite(
            "stripe_metadata_mention_replaced", objects: found[.mention] ?? [], subscriptions: found[.mentionedSubscription] ?? [],
            excluding: found[.owned] ?? [], from: from, to: to, on: connection)
        // Counted where something changed: an erasure repeated finds its objects scrubbed already (erased again, nothing
        // moved: `alreadyErased`).
        let objects = try await rewrite(
            "stripe_object_scrubbed", objects: found[.owned] ?? [], subscriptions: found[.holding] ?? [], excluding: [], from: from, to: to,
            on: connection)
        return objects
    }

    /// What the erasure's first statement finds: the account's objects and subscriptions, and the sessions and
    /// subscriptions of others whose metadata mentions it.
    private enum Found: String {
        case owned, holding, mention, mentionedSubscription
    }

    /// Rewrites with `function` — `stripe_object_scrubbed` (sql/0065, sql/0073) or `stripe_metadata_mention_replaced` (sql/0073), each
    /// `(document, id, pseudonym)` — the objects `ids` and those of `subscriptions`, but not `excluding`, and the events
    /// of those objects and subscriptions (Stripe's JSON as received, bytes: rewritten as JSON), each where it changes;
    /// returns how many objects changed.
    private func rewrite(
        _ function: StaticString, objects ids: [String], subscriptions: [String], excluding: [String], from: String, to: String,
        on connection: PostgresConnection
    ) async throws -> Int {
        var objectBinds = PostgresBindings()
        var eventBinds = PostgresBindings()
        for value in [ids, subscriptions] {
            objectBinds.append(value)
            eventBinds.append(value)
        }
        objectBinds.append(excluding)
        for value in [from, to] {
            objectBinds.append(value)
            eventBinds.append(value)
        }
        let changed = try await count(
            connection,
            PostgresQuery(
                unsafeSQL: """
                    UPDATE stripe_objects SET body = read.body
                    FROM (SELECT id, \(function)(body, $4, $5) AS body, body AS was FROM stripe_objects
                          WHERE (id = ANY($1) OR subscription_id = ANY($2)) AND id <> ALL($3)) AS read
                    WHERE stripe_objects.id = read.id AND read.body <> read.was
                    """, binds: objectBinds))
        _ = try await count(
            connection,
            PostgresQuery(
                unsafeSQL: """
                    UPDATE stripe_events SET body = convert_to(read.body::text, 'UTF8')
                    FROM (SELECT id, \(function)(received, $3, $4) AS body, received
                          FROM (SELECT id, convert_from(body, 'UTF8')::jsonb AS received FROM stripe_events
                                WHERE id IN (SELECT id FROM stripe_events WHERE object_id = ANY($1)
                                             UNION SELECT id FROM stripe_events WHERE subscription_id = ANY($2))) AS events) AS read
                    WHERE stripe_events.id = read.id AND read.body <> read.received
                    """, binds: eventBinds))
        return changed
    }
}
