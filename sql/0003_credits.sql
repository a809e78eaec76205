-- Storekeeper schema, version 3: usage credits. An append-only ledger of signed deltas, each with a unique
-- operation key derived from Apple identifiers (or the caller's idempotency key), grouped into buckets with a
-- validity window. A balance is the sum of the ledger rows of the buckets live at an instant.

CREATE TABLE credit_buckets (
    key                     text PRIMARY KEY,  -- cycle:<transactionId>:m<k>:<meter> | topup:<account>:<meter> |
                                               -- daily:<account>:<meter>:<day>:<tier> | free:<account>:<meter>:<month>
    meter                   text NOT NULL,
    kind                    text NOT NULL CHECK (kind IN ('cycle', 'topup', 'daily', 'free')),
    original_transaction_id text,              -- cycle buckets follow their subscription's account
    transaction_id          text,
    account_id              uuid,              -- top-up, daily and free buckets belong to an account
    valid_from              timestamptz NOT NULL,
    valid_until             timestamptz,       -- NULL: never expires (top-ups)
    price                   bigint,            -- cycle: what the period cost (milliunits), for upgrade proration
    CHECK ((kind = 'cycle') = (original_transaction_id IS NOT NULL)),
    CHECK ((kind = 'cycle') = (account_id IS NULL))
);
CREATE INDEX credit_buckets_subscription ON credit_buckets (original_transaction_id, transaction_id)
    WHERE original_transaction_id IS NOT NULL;
CREATE INDEX credit_buckets_account ON credit_buckets (account_id, meter) WHERE account_id IS NOT NULL;

CREATE TABLE credit_ledger (
    id            bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    operation_key text NOT NULL UNIQUE,    -- grant:<transactionId>:m<k>:<meter>, refund:…, spend:<account>:<key>:<n>, …
    bucket        text NOT NULL REFERENCES credit_buckets (key),
    delta         bigint NOT NULL CHECK (delta <> 0),
    reason        text NOT NULL,
    created_at    timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX credit_ledger_bucket ON credit_ledger (bucket);

-- The first answer to every usage request, so a retried request gets the same answer and is charged once.
CREATE TABLE usage_requests (
    account_id      uuid NOT NULL,
    idempotency_key text NOT NULL,
    meter           text NOT NULL,
    amount          bigint NOT NULL,
    http_status     integer NOT NULL,
    answer          jsonb NOT NULL,
    created_at      timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (account_id, idempotency_key)
);
