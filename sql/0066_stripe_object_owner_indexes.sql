-- storekeeper: outside a transaction
-- What an erasure looks up by the account's id, by index (ErasedAccounts+Stripe, ErasedAccounts+Events,
-- holdsAnything): a Checkout Session or a subscription an app created by its metadata.storekeeper_account_id (a
-- session's client_reference_id has sql/0047's stripe_objects_checkout_account), the subscriptions an app linked to the
-- account, and the transfer events of the account's subscriptions. Without them each erasure read every stored Stripe
-- object and every event while it held the account's lock. Built concurrently: the intake and the worker go on; the
-- partial index on events holds only the transfers.
CREATE INDEX CONCURRENTLY IF NOT EXISTS stripe_objects_account_metadata ON stripe_objects ((body->'metadata'->>'storekeeper_account_id'))
    WHERE object IN ('checkout.session', 'subscription');
CREATE INDEX CONCURRENTLY IF NOT EXISTS stripe_links_account ON stripe_links (account_id);
CREATE INDEX CONCURRENTLY IF NOT EXISTS events_transfers ON events (subscription_id) WHERE type = 'subscription.transferred';
