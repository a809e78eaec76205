-- storekeeper: outside a transaction
-- Indexes the Stripe lookups that scanned their tables (issue 56): the account timeline's events of a subscription an
-- invoice event names, an account's open Checkout Session, and a one-time payment's session, charges and disputes.
-- Built concurrently, so a live install keeps writing these tables while they build; each statement may run again
-- (SchemaMigrator drops an index a failed build left invalid before building it again).
CREATE INDEX CONCURRENTLY IF NOT EXISTS stripe_events_subscription ON stripe_events (subscription_id)
    WHERE subscription_id IS NOT NULL;
CREATE INDEX CONCURRENTLY IF NOT EXISTS stripe_objects_checkout_account ON stripe_objects ((body->>'client_reference_id'))
    WHERE object = 'checkout.session';
CREATE INDEX CONCURRENTLY IF NOT EXISTS stripe_objects_payment ON stripe_objects ((body->>'payment_intent'))
    WHERE object IN ('checkout.session', 'charge', 'dispute');
