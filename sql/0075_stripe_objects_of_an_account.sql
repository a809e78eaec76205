-- Which of Stripe's stored objects are an account's, as one rule for the erasure and the export. The export read only
-- the objects of the subscriptions the account holds, so an export left out a one-time payment's Checkout Session,
-- charge and dispute, a session whose subscription was never stored, and every Stripe event (helper-142), while the
-- erasure found and scrubbed them all: Article 15 asks for what Article 17 erases. The erasure's look-up
-- (ErasedAccounts+Stripe, sql/0073) moves here unchanged, named by what it finds:
--   - `holding`: the subscriptions of `held` (those the account holds or held, and its one-time purchases), those an app
--     linked to it (`stripe_links`), and those its sessions or their metadata name that no other account holds;
--   - `owned`: its Checkout Sessions (`client_reference_id`, else `metadata.storekeeper_account_id`), the objects of
--     the `holding` subscriptions, and its one-time payments' charges and disputes (by PaymentIntent).
-- `holder` is who holds the account's rows now: the account itself for an export, the pseudonym during an erasure (its
-- rows moved already). A UUID id is matched in any case (`account_named`).
--
-- Online: a function, no table change. Planned with the caller's values (a SQL function of one SELECT is inlined),
-- so the look-ups by id stay the index scans sql/0047 and sql/0066 made for them.
CREATE FUNCTION stripe_objects_of_account(named_account text, holder_account text, held_subscriptions text[])
RETURNS TABLE (found text, object_id text) LANGUAGE sql STABLE AS $$
    WITH sessions AS (
        SELECT o.id, o.subscription_id, o.body FROM stripe_objects o
        WHERE o.object = 'checkout.session' AND account_named(o.body->>'client_reference_id', named_account)
        UNION SELECT o.id, o.subscription_id, o.body FROM stripe_objects o
        WHERE o.object = 'checkout.session' AND account_named(o.body->'metadata'->>'storekeeper_account_id', named_account)
            AND o.body->>'client_reference_id' IS NULL
    ), unheld AS (
        SELECT named.subscription FROM (
            SELECT s.body->>'subscription' AS subscription FROM sessions s
            UNION SELECT o.id FROM stripe_objects o
            WHERE o.object = 'subscription' AND account_named(o.body->'metadata'->>'storekeeper_account_id', named_account)
        ) AS named
        -- Nobody else holds it (a row without an account is nobody's), and no session of it names another account,
        -- which would come first (an unsold price's subscription of another's checkout).
        WHERE named.subscription IS NOT NULL
            AND NOT EXISTS (SELECT 1 FROM subscriptions s WHERE s.original_transaction_id = named.subscription AND s.account_id <> holder_account)
            AND NOT EXISTS (SELECT 1 FROM stripe_objects cs WHERE cs.subscription_id = named.subscription AND cs.object = 'checkout.session'
                            AND NOT account_named(cs.body->>'client_reference_id', named_account))
    ), holdings AS (
        SELECT unnest(held_subscriptions) AS subscription
        UNION SELECT k.subscription_id FROM stripe_links k WHERE k.account_id = holder_account
        UNION SELECT u.subscription FROM unheld u
    ), owned AS (
        SELECT s.id FROM sessions s
        UNION SELECT o.id FROM holdings h JOIN stripe_objects o ON o.subscription_id = h.subscription
        UNION SELECT o.id FROM sessions s
            JOIN stripe_objects o ON o.body->>'payment_intent' = s.body->>'payment_intent' AND o.subscription_id IS NULL
                AND o.object IN ('charge', 'dispute')
        WHERE s.subscription_id IS NULL AND s.body->>'payment_intent' IS NOT NULL
    )
    SELECT 'owned', owned.id FROM owned
    UNION ALL SELECT 'holding', holdings.subscription FROM holdings
$$;
