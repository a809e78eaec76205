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

-- The status reads what each meter holds beside its buckets, in the same round trip: one row per account and meter
-- with holds, shaped as a bucket row of kind `held` (the balance is the amount held). Same signature and columns as
-- sql/0022's, so the function is replaced in place.
CREATE OR REPLACE FUNCTION account_status_inputs(accounts text[], at_time timestamptz, or_later boolean)
RETURNS TABLE (subscription subscriptions, bucket_key text, bucket_meter text, bucket_kind text, bucket_subscription text,
    bucket_billing_period text, bucket_account text, bucket_valid_from timestamptz, bucket_valid_until timestamptz,
    bucket_price bigint, bucket_balance bigint, bucket_owner text, source entitlement_sources)
LANGUAGE plpgsql STABLE
SET enable_seqscan = off
SET plan_cache_mode = force_generic_plan
AS $$
BEGIN
    RETURN QUERY
    SELECT s, NULL::text, NULL::text, NULL::text, NULL::text, NULL::text, NULL::text, NULL::timestamptz, NULL::timestamptz,
        NULL::bigint, NULL::bigint, NULL::text, NULL::entitlement_sources
    FROM subscriptions s WHERE s.account_id = ANY(accounts);
    RETURN QUERY
    SELECT NULL::subscriptions, l.*, NULL::entitlement_sources FROM live_credit_buckets(accounts, at_time, or_later) AS l;
    RETURN QUERY
    SELECT NULL::subscriptions, NULL::text, NULL::text, NULL::text, NULL::text, NULL::text, NULL::text, NULL::timestamptz,
        NULL::timestamptz, NULL::bigint, NULL::bigint, NULL::text, e
    FROM entitlement_sources e
    WHERE e.account_id = ANY(accounts) AND (e.ended_at IS NULL OR e.ended_at > at_time) AND (e.ends_at IS NULL OR e.ends_at > at_time);
    RETURN QUERY
    SELECT NULL::subscriptions, 'held:' || h.meter, h.meter, 'held'::text, NULL::text, NULL::text, h.account_id, min(h.created_at),
        NULL::timestamptz, NULL::bigint, sum(h.amount)::bigint, h.account_id, NULL::entitlement_sources
    FROM credit_holds h WHERE h.account_id = ANY(accounts) AND h.state = 'held'
    GROUP BY h.account_id, h.meter;
END
$$;
