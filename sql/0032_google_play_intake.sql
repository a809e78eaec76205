-- Google Play's Real-time developer notifications as Cloud Pub/Sub pushed them (issue 52, intake). Pub/Sub delivers
-- at least once: the message id is the key a retry is recognised by. The push carries no signed facts — only which
-- purchase token changed — so what is kept is the notification and, per token, that it is known: reading the token's
-- state from the Play Developer API is the worker's next step.
CREATE TABLE google_notifications (
    message_id        text PRIMARY KEY,
    subscription      text NOT NULL,          -- the push subscription (projects/…/subscriptions/…)
    published_at      timestamptz,
    received_at       timestamptz NOT NULL DEFAULT now(),
    package_name      text NOT NULL,
    event_time        timestamptz,
    kind              text NOT NULL,          -- subscription, one_time_product, voided_purchase, pending_refund_review, test
    notification_type integer,                -- the numbered type of a subscription or one-time notification
    purchase_token    text,
    body              bytea NOT NULL,         -- the decoded DeveloperNotification, as received
    processed_at      timestamptz,
    outcome           text
);
CREATE INDEX google_notifications_token ON google_notifications (purchase_token) WHERE purchase_token IS NOT NULL;

-- Every purchase token a notification named: what `storekeeper google sync` re-reads, and where a read's time is kept.
CREATE TABLE google_purchase_tokens (
    purchase_token         text PRIMARY KEY,
    kind                   text NOT NULL,     -- subscription or one_time_product (voided and refund reviews name either)
    product_id             text,
    first_seen_at          timestamptz NOT NULL DEFAULT now(),
    last_event_at          timestamptz,
    last_notification_type integer,
    last_message_id        text NOT NULL,
    read_at                timestamptz        -- when the Play Developer API was last read for it
);

-- Every read of a subscription token from purchases.subscriptionsv2.get, as Google answered it: a Play subscription's
-- state is a function of these reads (Play sends no signed history, only its state now, so each read is kept).
CREATE TABLE google_subscription_reads (
    purchase_token        text NOT NULL,
    read_at               timestamptz NOT NULL,
    subscription_state    text NOT NULL,
    expiry_time           timestamptz,
    latest_order_id       text,
    linked_purchase_token text,
    body                  bytea NOT NULL,          -- the answer's bytes (jsonb would drop duplicate keys, refuse \u0000)
    PRIMARY KEY (purchase_token, read_at)
);
CREATE INDEX google_subscription_reads_linked ON google_subscription_reads (linked_purchase_token) WHERE linked_purchase_token IS NOT NULL;

-- Each Play subscription — a chain of tokens linked by linkedPurchaseToken — as derived from all its reads, keyed by
-- the chain's first token. Derived again after every read; what support and, next, access read.
CREATE TABLE google_subscriptions (
    id            text PRIMARY KEY,
    current_token text NOT NULL,
    tokens        text[] NOT NULL,
    product_id    text,
    state         text NOT NULL,
    expires_at    timestamptz,
    will_renew    boolean NOT NULL,
    is_trial      boolean NOT NULL,
    is_test       boolean NOT NULL,
    account_token text,
    periods       integer NOT NULL,
    derived_at    timestamptz NOT NULL
);
