-- What Storekeeper read from Stripe's API (issue "Web purchases through Stripe"): every object as last read, filed under
-- the subscription it concerns, so a subscription is derived again from the whole set — whatever order its events
-- came in. A newer read replaces an older one, never the other way round.
CREATE TABLE stripe_objects (
    id              text PRIMARY KEY,         -- sub_…, in_…, ch_…, dp_…, cs_…
    object          text NOT NULL,            -- subscription, invoice, charge, dispute, checkout.session
    subscription_id text,                     -- the subscription it concerns; NULL for a one-time payment's session
    body            jsonb NOT NULL,
    read_at         timestamptz NOT NULL
);
CREATE INDEX stripe_objects_subscription ON stripe_objects (subscription_id) WHERE subscription_id IS NOT NULL;

-- Subscriptions an app created itself, linked to an account (`POST /v1/accounts/{id}/stripe/link`): the last of the
-- three ways a Stripe subscription names its account, after checkout's client_reference_id and its metadata.
CREATE TABLE stripe_links (
    subscription_id text PRIMARY KEY,
    account_id      text NOT NULL,
    linked_at       timestamptz NOT NULL DEFAULT now()
);

-- The subscription an invoice event bills, as the event says (an invoice never changes subscription): the worker reads
-- that subscription without reading the invoice first.
ALTER TABLE stripe_events ADD COLUMN subscription_id text;
