-- What the credit rules of a change decided, posted in one round trip (CreditLedger.apply), and — for the events of
-- that change — the status inputs of the accounts they concern as the posts leave them (account_status_inputs): an
-- apply posted, then read the statuses, in two round trips of the nine its transaction had left.
-- `operations` is a JSON array, in posting order, of
--   {"kind": "post", "operation_key", "bucket", "delta", "reason"} with, to open the bucket unless it exists,
--       "meter", "bucket_kind", "subscription", "billing_period", "account", "valid_from", "valid_until", "price";
--   {"kind": "window_end", "bucket", "valid_until"};
-- times in microseconds since 2000-01-01 UTC, as PostgreSQL keeps them. A post whose operation key is posted already
-- writes nothing, and a zero delta no ledger row (the bucket is still opened). Each posted operation key comes back in
-- a row of its own (`posted_key`, the rest NULL); then the status inputs of `status_accounts`, live at `at_time` or
-- later (`posted_key` NULL).
CREATE FUNCTION post_credit_operations(operations jsonb, status_accounts text[], at_time timestamptz)
RETURNS TABLE (subscription subscriptions, bucket_key text, bucket_meter text, bucket_kind text, bucket_subscription text,
    bucket_billing_period text, bucket_account text, bucket_valid_from timestamptz, bucket_valid_until timestamptz,
    bucket_price bigint, bucket_balance bigint, bucket_owner text, posted_key text)
LANGUAGE plpgsql VOLATILE
SET enable_seqscan = off
SET plan_cache_mode = force_generic_plan
AS $$
#variable_conflict use_column
DECLARE
    op record;
    epoch constant timestamptz := timestamptz '2000-01-01 00:00:00+00';
BEGIN
    FOR op IN
        SELECT o.* FROM jsonb_array_elements(operations) WITH ORDINALITY AS e(element, position)
        CROSS JOIN LATERAL jsonb_to_record(e.element) AS o(kind text, operation_key text, bucket text, delta bigint,
            reason text, meter text, bucket_kind text, subscription text, billing_period text, account text,
            valid_from bigint, valid_until bigint, price bigint)
        ORDER BY e.position
    LOOP
        IF op.kind = 'window_end' THEN
            UPDATE credit_buckets SET valid_until = epoch + op.valid_until * interval '1 microsecond' WHERE key = op.bucket;
            CONTINUE;
        END IF;
        IF op.meter IS NOT NULL THEN
            INSERT INTO credit_buckets (key, meter, kind, original_transaction_id, billing_period, account_id, valid_from,
                valid_until, price)
            VALUES (op.bucket, op.meter, op.bucket_kind, op.subscription, op.billing_period, op.account,
                epoch + op.valid_from * interval '1 microsecond', epoch + op.valid_until * interval '1 microsecond', op.price)
            ON CONFLICT (key) DO NOTHING;
        END IF;
        IF op.delta <> 0 THEN
            INSERT INTO credit_ledger (operation_key, bucket, delta, reason) VALUES (op.operation_key, op.bucket, op.delta, op.reason)
            ON CONFLICT (operation_key) DO NOTHING
            RETURNING operation_key INTO posted_key;
            IF FOUND THEN
                RETURN NEXT;
            END IF;
        END IF;
    END LOOP;
    posted_key := NULL;
    IF cardinality(status_accounts) > 0 THEN
        RETURN QUERY SELECT s.*, NULL::text FROM account_status_inputs(status_accounts, at_time, true) AS s;
    END IF;
END
$$;
