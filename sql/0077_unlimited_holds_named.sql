-- An unlimited meter's hold takes from no bucket (its debits are empty) and sql/0068 counted it in the status's `held`
-- whole and for good: once the meter was counted again (the grant deleted, the subscription refunded or expired) the
-- hold still counted, although it kept nothing out of `remaining`, so held + spent + remaining came to more than the
-- account was ever given (helper-153: 100 topped up, 40 held under the admin tier, the grant deleted → held 40,
-- remaining 105, and 105 could be spent). Those rows now say what they are by their key (`held-unlimited:<meter>`,
-- where the held credits of buckets have `held:<meter>`): the status counts them only while the meter is unlimited
-- (CreditLedger.StatusInputs). A process of the release before reads them as it did (it reads a held row by its kind).
--
-- Online: the function's catalog row; status reads wait for this file's commit.
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
    SELECT NULL::subscriptions, 'held-unlimited:' || h.meter, h.meter, 'held'::text, NULL::text, NULL::text, h.account_id, 'epoch'::timestamptz,
        NULL::timestamptz, NULL::bigint, least(sum(h.amount::numeric), 9223372036854775807)::bigint, h.account_id, NULL::entitlement_sources
    FROM credit_holds h WHERE h.account_id = ANY(accounts) AND h.state = 'held' AND h.debits = '[]'::jsonb
    GROUP BY h.account_id, h.meter;
END
$$;
