-- The support console (issue 43): finding an account by any id a customer or the app gives, and its timeline.

-- Every transaction id of every subscription (Stripe: every invoice id), written when a subscription's period in force
-- changes: a renewal's or a refund's transaction id, pasted from a log or a receipt, leads to its subscription.
CREATE TABLE subscription_transactions (
    transaction_id          text PRIMARY KEY,
    original_transaction_id text NOT NULL
);
-- A claimed or Server API transaction leads to its subscription too.
CREATE INDEX subscription_events_transaction ON subscription_events (transaction_id);
-- A Stripe customer id leads to the subscriptions held for it.
CREATE INDEX stripe_objects_customer ON stripe_objects ((body->>'customer')) WHERE object = 'subscription';
-- The timeline reads the deliveries of an account's recent events by event id; the primary key leads with the
-- endpoint, and the events' retention deletes cascade along this column too.
CREATE INDEX webhook_deliveries_event ON webhook_deliveries (event_id);
