-- Holds (issue 53): credits taken from an account's buckets before a model call, charged in part when it settles, the
-- rest given back (or lapsed with a bucket closed meanwhile). The hold's debits are ledger rows `hold:<id>:<n>`
-- (reason `hold`); what goes back is `hold-return:<id>:<n>`; the charged part is re-posted as `usage` at the settle
-- (`hold-charge:<id>:<n>` with its offset), so the usage analytics count it on the day it settled.
CREATE TABLE credit_holds (
    id              uuid PRIMARY KEY,
    account_id      text NOT NULL,
    idempotency_key text NOT NULL,
    meter           text NOT NULL,
    amount          bigint NOT NULL CHECK (amount > 0 AND amount <= 1000000000),
    -- The buckets it took from, in spend order: [{"bucket": key, "amount": n}] (empty for an unlimited meter). The
    -- first debit's ledger row is `hold:<id>:0`: what was posted to a bucket after it came after the hold.
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

-- A hold's start and end change what its account's status says (`held`): `serve` drops it from the status cache
-- (sql/0012), whether or not the end wrote ledger rows (an unlimited meter's hold writes none).
CREATE TRIGGER credit_holds_inserted AFTER INSERT ON credit_holds REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION storekeeper_notify_subscription_accounts();
CREATE TRIGGER credit_holds_updated AFTER UPDATE ON credit_holds REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION storekeeper_notify_subscription_accounts();

-- The status reads what each meter holds beside its buckets, in the same round trip: one row per account and meter
-- with holds, shaped as a bucket row of kind `held` (the balance is the amount held, summed as numeric and clamped so
-- no number of holds can fail the read). A function of its own beside sql/0022's, which stays as it was: a `serve` of
-- the release before, still running during a rollout, would take a `held` row for a bucket to spend.
CREATE FUNCTION account_status_inputs_with_holds(accounts text[], at_time timestamptz, or_later boolean)
RETURNS TABLE (subscription subscriptions, bucket_key text, bucket_meter text, bucket_kind text, bucket_subscription text,
    bucket_billing_period text, bucket_account text, bucket_valid_from timestamptz, bucket_valid_until timestamptz,
    bucket_price bigint, bucket_balance bigint, bucket_owner text, source entitlement_sources)
LANGUAGE plpgsql STABLE
SET enable_seqscan = off
SET plan_cache_mode = force_generic_plan
AS $$
BEGIN
    RETURN QUERY SELECT * FROM account_status_inputs(accounts, at_time, or_later);
    RETURN QUERY
    SELECT NULL::subscriptions, 'held:' || h.meter, h.meter, 'held'::text, NULL::text, NULL::text, h.account_id, min(h.created_at),
        NULL::timestamptz, NULL::bigint, least(sum(h.amount::numeric), 9223372036854775807)::bigint, h.account_id, NULL::entitlement_sources
    FROM credit_holds h WHERE h.account_id = ANY(accounts) AND h.state = 'held'
    GROUP BY h.account_id, h.meter;
END
$$;
