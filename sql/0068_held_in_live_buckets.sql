-- What the status reports as `held` per meter is what holds keep out of `remaining` (docs/credits.md, "Status"): the
-- credits of open holds still in a live bucket. sql/0036 summed every open hold whole, so a hold of yesterday's free
-- credits (or of a window a cycle reset or a refund has closed) kept counting after midnight although the new day is
-- whole: a client adding `held` to `remaining` saw more than the account ever had. Open holds are now summed by the
-- validity of the buckets their debits took from, each row with that validity (a status evaluated later, from the
-- cache, counts only the rows live then); debits in buckets not live at `at_time` (or later, with `or_later`, as
-- live_credit_buckets reads) count nothing: the hold's end lapses them. An unlimited meter's hold takes from no bucket
-- (its debits are empty) and counts whole, as before: from the epoch, with no end (its creation time read by a
-- host whose clock is behind would leave it out).
CREATE OR REPLACE FUNCTION account_status_inputs_with_holds(accounts text[], at_time timestamptz, or_later boolean)
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
    SELECT NULL::subscriptions, 'held:' || h.meter, h.meter, 'held'::text, NULL::text, NULL::text, h.account_id, b.valid_from,
        b.valid_until, NULL::bigint, least(sum((d->>'amount')::numeric), 9223372036854775807)::bigint, h.account_id,
        NULL::entitlement_sources
    FROM credit_holds h
    CROSS JOIN LATERAL jsonb_array_elements(h.debits) AS d
    JOIN credit_buckets b ON b.key = d->>'bucket'
    WHERE h.account_id = ANY(accounts) AND h.state = 'held'
        AND (or_later OR b.valid_from <= at_time) AND (b.valid_until IS NULL OR b.valid_until > at_time)
    GROUP BY h.account_id, h.meter, b.valid_from, b.valid_until;
    RETURN QUERY
    SELECT NULL::subscriptions, 'held:' || h.meter, h.meter, 'held'::text, NULL::text, NULL::text, h.account_id, 'epoch'::timestamptz,
        NULL::timestamptz, NULL::bigint, least(sum(h.amount::numeric), 9223372036854775807)::bigint, h.account_id, NULL::entitlement_sources
    FROM credit_holds h WHERE h.account_id = ANY(accounts) AND h.state = 'held' AND h.debits = '[]'::jsonb
    GROUP BY h.account_id, h.meter;
END
$$;
