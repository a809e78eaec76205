-- Ledger rows posted through post_credit_operations (grants, resets, revocations) are dated `at_time`, the moment the
-- caller's clock gave (the apply's, a grant's), as spends, holds and reversals already are — not the database's now().
-- In production the two agree to the millisecond; under `storekeeper dev`'s moved clock the account page's timeline and
-- the ledger no longer mixed real and dev times. Same signature: CREATE OR REPLACE swaps the body in place.
CREATE OR REPLACE FUNCTION post_credit_operations(operations jsonb, status_accounts text[], at_time timestamptz)
RETURNS TABLE (subscription subscriptions, bucket_key text, bucket_meter text, bucket_kind text, bucket_subscription text,
    bucket_billing_period text, bucket_account text, bucket_valid_from timestamptz, bucket_valid_until timestamptz,
    bucket_price bigint, bucket_balance bigint, bucket_owner text, source entitlement_sources, posted_key text)
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
            INSERT INTO credit_ledger (operation_key, bucket, delta, reason, created_at)
            VALUES (op.operation_key, op.bucket, op.delta, op.reason, at_time)
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
