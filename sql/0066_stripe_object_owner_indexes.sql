-- storekeeper: outside a transaction
-- The Stripe objects an account is named in as their holder, found by index (ErasedAccounts+Stripe, holdsAnything):
-- a Checkout Session by its client_reference_id, a session or a subscription an app created by its
-- metadata.storekeeper_account_id. Without them each erasure read every stored object — invoices mostly, some per
-- subscriber and month — while it held the account's lock. Built concurrently: the intake and the worker go on.
CREATE INDEX CONCURRENTLY IF NOT EXISTS stripe_objects_client_reference ON stripe_objects ((body->>'client_reference_id'))
    WHERE object = 'checkout.session';
CREATE INDEX CONCURRENTLY IF NOT EXISTS stripe_objects_account_metadata ON stripe_objects ((body->'metadata'->>'storekeeper_account_id'))
    WHERE object IN ('checkout.session', 'subscription');
