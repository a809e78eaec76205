-- Holds in groups, one round trip fewer (issue 53's pace): the group's first statement locks its accounts, reads the
-- holds it names (sql/0037's `lock_accounts_and_read_holds`, with sql/0038's claims), and reads what the locked
-- accounts have: the status inputs of those `taking` a hold (sql/0036's `account_status_inputs_with_holds`: what a
-- spend reads), the live buckets of the others, which only end holds (sql/0014: where their credits go back) — which a
-- second statement read before. Each RETURN QUERY is a statement of its own, after the
-- locks, so the status read sees what the previous holder of a lock committed. Hold rows carry `hold`, status rows
-- the other columns. (sql/0037's function stays for a `serve` of the release before, during a rollout.)
CREATE FUNCTION lock_accounts_read_holds_and_status(lock_accounts text[], hold_ids uuid[], key_accounts text[], keys text[], taking text[],
    at_time timestamptz)
RETURNS TABLE (subscription subscriptions, bucket_key text, bucket_meter text, bucket_kind text, bucket_subscription text,
    bucket_billing_period text, bucket_account text, bucket_valid_from timestamptz, bucket_valid_until timestamptz,
    bucket_price bigint, bucket_balance bigint, bucket_owner text, source entitlement_sources, hold credit_holds, since_hold jsonb)
LANGUAGE plpgsql VOLATILE
SET enable_seqscan = off
SET plan_cache_mode = force_generic_plan
AS $$
DECLARE
    ending text[];
BEGIN
    RETURN QUERY
    SELECT NULL::subscriptions, NULL::text, NULL::text, NULL::text, NULL::text, NULL::text, NULL::text, NULL::timestamptz,
        NULL::timestamptz, NULL::bigint, NULL::bigint, NULL::text, NULL::entitlement_sources, r.hold, r.since_hold
    FROM lock_accounts_and_read_holds(lock_accounts, hold_ids, key_accounts, keys) AS r;
    IF cardinality(taking) > 0 THEN
        RETURN QUERY SELECT s.*, NULL::credit_holds, NULL::jsonb FROM account_status_inputs_with_holds(taking, at_time, false) AS s;
    END IF;
    SELECT array_agg(DISTINCT named.account) INTO ending FROM (
        SELECT unnest(lock_accounts) UNION ALL SELECT h.account_id FROM credit_holds h WHERE h.id = ANY(hold_ids)
    ) AS named(account) WHERE named.account <> ALL(taking);
    IF cardinality(ending) > 0 THEN
        RETURN QUERY SELECT NULL::subscriptions, b.*, NULL::entitlement_sources, NULL::credit_holds, NULL::jsonb
        FROM live_credit_buckets(ending, at_time, false) AS b;
    END IF;
END
$$;
