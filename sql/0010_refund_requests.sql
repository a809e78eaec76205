-- Refund defence. Apple asks for consumption data on every CONSUMPTION_REQUEST (each with its own notificationUUID,
-- even for the same purchase) and wants the answer within 12 hours; it may be sent only with the customer's consent.

-- An account's consent to share consumption data with Apple, as the app last recorded it.
CREATE TABLE consumption_consents (
    account_id   text PRIMARY KEY,
    consented    boolean NOT NULL,
    recorded_at  timestamptz NOT NULL
);

-- One row per consumption request: what was asked, what the app said, what was sent, and Apple's decision.
CREATE TABLE refund_requests (
    id                      uuid PRIMARY KEY,          -- the CONSUMPTION_REQUEST's notificationUUID
    account_id              text NOT NULL,
    transaction_id          text NOT NULL,
    original_transaction_id text NOT NULL,
    product_id              text NOT NULL,
    billing_period          text NOT NULL,             -- webOrderLineItemId (else transaction_id), as cycle buckets are keyed
    purchase                text NOT NULL,             -- consumable | subscription
    environment             text NOT NULL,
    reason                  text,                      -- Apple's consumptionRequestReason
    requested_at            timestamptz NOT NULL,      -- the notification's signedDate
    answer_at               timestamptz NOT NULL,      -- when Storekeeper answers unless the app did
    deadline_at             timestamptz NOT NULL,      -- Apple's: requested_at + 12 h
    -- pending | sent | no_consent | missed_deadline | rejected | not_configured
    state                   text NOT NULL DEFAULT 'pending',
    app_answer              jsonb,                     -- the app's own answer, when it gave one
    sent_answer             jsonb,                     -- the body Apple accepted (or refused)
    attempts                integer NOT NULL DEFAULT 0,
    last_error              text,
    answered_at             timestamptz,
    outcome                 text,                      -- REFUND | REFUND_DECLINED, from Apple's notification
    outcome_at              timestamptz
);
CREATE INDEX refund_requests_account ON refund_requests (account_id, requested_at DESC);
CREATE INDEX refund_requests_transaction ON refund_requests (transaction_id) WHERE outcome IS NULL;
