-- Google Play one-time products, refunds, refund reviews and acknowledgements (issue 52).
--
-- Each one-time product's purchase as last read from purchases.productsv2 (a purchase does not chain as a
-- subscription's tokens do, and its newest read says all: its quantity, what is still refundable, whether it was
-- consumed), and its newest read that said PURCHASED: what was granted stays known if a later read says otherwise
-- (Google's answer for a refunded purchase is not documented). account_token is obfuscatedExternalAccountId, kept
-- apart for erasure's exact match.
CREATE TABLE google_products (
    purchase_token    text PRIMARY KEY,
    order_id          text,
    product_id        text NOT NULL,
    purchase_state    text NOT NULL,
    account_token     text,
    read_at           timestamptz NOT NULL,
    body              bytea NOT NULL,      -- the answer's bytes, as google_subscription_reads keeps them
    purchased_read_at timestamptz,
    purchased_body    bytea,
    purchased_account_token text           -- the granted read's obfuscatedExternalAccountId (it may differ from the newest's)
);
CREATE INDEX google_products_order ON google_products (order_id) WHERE order_id IS NOT NULL;
CREATE INDEX google_products_account_token ON google_products (account_token) WHERE account_token IS NOT NULL;
CREATE INDEX google_products_purchased_account_token ON google_products (purchased_account_token) WHERE purchased_account_token IS NOT NULL;

-- Orders Google refunded or charged back, from voidedPurchaseNotification and the hourly voidedpurchases.list. A
-- notification says no time or quantity (its event time and "partial" are kept); the list's entry says both. A
-- derivation counts the larger of the two measures, so the same refund seen both ways counts once.
CREATE TABLE google_voided_purchases (
    order_id       text NOT NULL,
    purchase_token text NOT NULL,
    voided_at      timestamptz NOT NULL,
    is_partial     boolean NOT NULL,
    quantity       bigint,
    source         integer,
    reason         integer,
    seen_via       text NOT NULL,          -- notification | list
    recorded_at    timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (order_id, voided_at, is_partial, seen_via)
);
CREATE INDEX google_voided_purchases_token ON google_voided_purchases (purchase_token);

-- Purchases granted to an account, until Google is told (acknowledge, or consume for a top-up): Google refunds what is
-- not acknowledged within three days, so what waits more than a day shows on the dashboard and in a metric.
CREATE TABLE google_acknowledgements (
    purchase_token  text PRIMARY KEY,
    kind            text NOT NULL,         -- subscription | product | consumable
    product_id      text NOT NULL,
    granted_at      timestamptz NOT NULL,
    acknowledged_at timestamptz,
    last_error      text
);
CREATE INDEX google_acknowledgements_waiting ON google_acknowledgements (granted_at) WHERE acknowledged_at IS NULL;

-- Play's chargeback reviews are refund requests too, answered through orders.reviewrefund with the token the
-- notification carried. Adding a column with a constant default rewrites nothing (PostgreSQL 11+).
ALTER TABLE refund_requests ADD COLUMN store text NOT NULL DEFAULT 'app_store', ADD COLUMN review_token text;

-- A chargeback review names an order: which subscription's period it paid for. (google_subscription_reads arrived with
-- sql/0032 in the same release, so no database holds enough of it for this index to lock writes for long.)
CREATE INDEX google_subscription_reads_order ON google_subscription_reads (latest_order_id) WHERE latest_order_id IS NOT NULL;
