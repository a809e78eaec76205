-- What accounts' statuses are computed from (CreditLedger.statusInputs: every apply's events, every spend group, every
-- status read the cache cannot answer): their subscriptions, whole, and their live buckets, each row one or the other.
-- A function for the reason `live_credit_buckets` is one (sql/0014): as a prepared statement over `= ANY($1)` it was
-- planned at every call, which cost as much as running it; here its plan is made once per connection.
CREATE FUNCTION account_status_inputs(accounts text[], at_time timestamptz, or_later boolean)
RETURNS TABLE (subscription subscriptions, bucket_key text, bucket_meter text, bucket_kind text, bucket_subscription text,
    bucket_billing_period text, bucket_account text, bucket_valid_from timestamptz, bucket_valid_until timestamptz,
    bucket_price bigint, bucket_balance bigint, bucket_owner text)
LANGUAGE plpgsql STABLE
SET enable_seqscan = off
SET plan_cache_mode = force_generic_plan
AS $$
BEGIN
    RETURN QUERY
    SELECT s, NULL::text, NULL::text, NULL::text, NULL::text, NULL::text, NULL::text, NULL::timestamptz, NULL::timestamptz,
        NULL::bigint, NULL::bigint, NULL::text
    FROM subscriptions s WHERE s.account_id = ANY(accounts);
    RETURN QUERY
    SELECT NULL::subscriptions, l.* FROM live_credit_buckets(accounts, at_time, or_later) AS l;
END
$$;
