-- Events the app's services hear about (docs/events.md): one row per change that matters, written in the transaction
-- of the change. `dedup_key` names the change itself (e.g. renewed:<subscription>:<billing period>), so deriving
-- again, replaying or re-delivering a notification never stores an event twice.
CREATE TABLE events (
    id              uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    -- Order of insertion; per account it is commit order, as every writer holds the account's lock.
    sequence        bigserial UNIQUE NOT NULL,
    -- The writing transaction: the feed only hands out rows of transactions older than every one still running, so a
    -- cursor never passes an event that commits late (docs/events.md).
    transaction_id  xid8 NOT NULL DEFAULT pg_current_xact_id(),
    dedup_key       text UNIQUE NOT NULL,
    type            text NOT NULL,
    account_id      text NOT NULL,
    subscription_id text,
    environment     text NOT NULL,
    created_at      timestamptz NOT NULL,
    body            jsonb NOT NULL
);
CREATE INDEX events_feed ON events (transaction_id, sequence);
CREATE INDEX events_account ON events (account_id, sequence);
CREATE INDEX events_created ON events (created_at);

-- One row per (endpoint, event) the endpoint subscribed to: what is left to send, in order per account.
CREATE TABLE webhook_deliveries (
    endpoint        text NOT NULL,
    event_id        uuid NOT NULL REFERENCES events (id) ON DELETE CASCADE,
    account_id      text NOT NULL,
    sequence        bigint NOT NULL,
    state           text NOT NULL DEFAULT 'pending',   -- pending | delivered | failed
    attempts        integer NOT NULL DEFAULT 0,
    first_attempt_at timestamptz,
    next_attempt_at timestamptz,
    delivered_at    timestamptz,
    PRIMARY KEY (endpoint, event_id)
);
CREATE INDEX webhook_deliveries_pending ON webhook_deliveries (endpoint, account_id, sequence) WHERE state = 'pending';
CREATE INDEX webhook_deliveries_failed ON webhook_deliveries (state) WHERE state <> 'delivered';

-- The delivery log: every attempt, its answer and how long it took.
CREATE TABLE webhook_attempts (
    id              bigserial PRIMARY KEY,
    endpoint        text NOT NULL,
    event_id        uuid NOT NULL REFERENCES events (id) ON DELETE CASCADE,
    attempted_at    timestamptz NOT NULL,
    status_code     integer,
    latency_ms      integer NOT NULL,
    error           text
);
CREATE INDEX webhook_attempts_event ON webhook_attempts (event_id, id);
