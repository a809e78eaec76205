-- Storekeeper schema, version 4: App Store Server API bookkeeping.

-- One late-renewal recheck per (subscription, period): scheduled when an auto-renewing period is applied (or a
-- DID_RENEW did not move it), counted on every check, resolved when Apple's answer settles it.
CREATE TABLE renewal_rechecks (
    original_transaction_id text NOT NULL,
    transaction_id          text NOT NULL,       -- the period's transaction
    due_at                  timestamptz NOT NULL,
    checks                  integer NOT NULL DEFAULT 0,
    last_status             integer,             -- Apple's status at the last check (1 active … 5 revoked)
    last_checked_at         timestamptz,
    resolved_at             timestamptz,
    PRIMARY KEY (original_transaction_id, transaction_id)
);

-- How far the periodic Notification History catch-up has read, per environment.
CREATE TABLE notification_history_checkpoints (
    environment text PRIMARY KEY,
    read_until  timestamptz NOT NULL,
    updated_at  timestamptz NOT NULL DEFAULT now()
);
