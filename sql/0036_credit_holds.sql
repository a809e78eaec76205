-- Holds (issue 53): credits taken from an account's buckets before a model call, charged in part when it settles, the
-- rest given back (or lapsed with a bucket closed meanwhile). The hold's debits are ledger rows `hold:<id>:<n>`
-- (reason `hold`); what goes back is `hold-return:<id>:<n>`; the charged part is re-posted as `usage` at the settle
-- (`hold-charge:<id>:<n>` with its offset), so the usage analytics count it on the day it settled.
CREATE TABLE credit_holds (
    id              uuid PRIMARY KEY,
    account_id      text NOT NULL,
    idempotency_key text NOT NULL,
    meter           text NOT NULL,
    amount          bigint NOT NULL CHECK (amount > 0),
    -- The buckets it took from, in spend order: [{"bucket": key, "amount": n}] (empty for an unlimited meter).
    debits          jsonb NOT NULL,
    created_at      timestamptz NOT NULL,
    expires_at      timestamptz NOT NULL,
    state           text NOT NULL DEFAULT 'held' CHECK (state IN ('held', 'settled', 'released', 'expired')),
    charged         bigint CHECK (charged >= 0 AND charged <= amount),
    returned        bigint,
    lapsed          bigint,
    ended_at        timestamptz,
    UNIQUE (account_id, idempotency_key),
    CHECK ((state = 'held') = (ended_at IS NULL))
);
CREATE INDEX credit_holds_account_held ON credit_holds (account_id) WHERE state = 'held';
CREATE INDEX credit_holds_expiry ON credit_holds (expires_at) WHERE state = 'held';
