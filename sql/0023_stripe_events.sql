-- Stripe's webhook events (issue "Web purchases through Stripe"): each stored once by its `evt_…` id, verified and
-- committed before the intake answers 200, then processed by a `stripe-event` job. An event of the other livemode is
-- stored and ignored. The body is kept as received: the worker reads the objects again from Stripe, the event only
-- says what to read.
CREATE TABLE stripe_events (
    id            text PRIMARY KEY,          -- evt_…
    type          text NOT NULL,
    livemode      boolean NOT NULL,
    object_id     text,                      -- data.object.id: sub_…, in_…, ch_…, cs_…
    object_type   text,                      -- data.object.object
    created_at    timestamptz NOT NULL,      -- Stripe's `created`
    signed_at     timestamptz NOT NULL,      -- the signature's t=
    received_at   timestamptz NOT NULL DEFAULT now(),
    ignored       boolean NOT NULL DEFAULT false,
    body          bytea NOT NULL,
    processed_at  timestamptz,
    outcome       text
);
CREATE INDEX stripe_events_object ON stripe_events (object_id);
