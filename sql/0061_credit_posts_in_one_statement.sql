-- An apply's credit posts cost PostgreSQL less (issue 56, part 3): `post_credit_operations` inserted its operations one
-- at a time, so each of a group's ledger rows ran the ledger's statement triggers (the kept balances, sql/0041; the
-- NOTIFY of its account, sql/0012) and the bucket's insert on its own. `pg_stat_statements` over a drain of first
-- purchases (2026-12-04, docs/capacity.md): the one-row insert into `credit_ledger` took 84.5 µs an apply, 35 of them
-- those triggers and the balance's key check, and the bucket's insert 33 µs — more than half of the post's 152 µs.
--
-- Now the buckets the operations open are inserted in one statement and their ledger rows in one more, each in the
-- operations' order (so the rows' ids follow it, as before), and the triggers run once for the group's rows. What the
-- loop did stays exactly so: a bucket named twice keeps its first opening (ON CONFLICT DO NOTHING skips a key proposed
-- earlier in the same statement too), an operation key posted already or twice is skipped and not returned. One list
-- the loop refused is now taken: a row posted to a bucket that the list opens only later (the loop's row found no
-- bucket for its kept balance); the credit rules open a bucket with its first row and never write one. Only where a
-- list ends a window (`window_end`: a refund, an upgrade) does the order of bucket writes matter — an end before the
-- bucket's opening in the list did nothing — and the loop runs as it did; renewals and first purchases end none. A
-- call with nothing to post (the status of accounts alone) inserts nothing: a statement trigger fires even for no
-- rows. Same signature: CREATE OR REPLACE swaps the body in place.
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
    IF jsonb_path_exists(operations, '$[*] ? (@.kind == "window_end")') THEN
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
    ELSIF jsonb_array_length(operations) > 0 THEN
        INSERT INTO credit_buckets (key, meter, kind, original_transaction_id, billing_period, account_id, valid_from,
            valid_until, price)
        SELECT o.bucket, o.meter, o.bucket_kind, o.subscription, o.billing_period, o.account,
            epoch + o.valid_from * interval '1 microsecond', epoch + o.valid_until * interval '1 microsecond', o.price
        FROM jsonb_array_elements(operations) WITH ORDINALITY AS e(element, position)
        CROSS JOIN LATERAL jsonb_to_record(e.element) AS o(bucket text, meter text, bucket_kind text, subscription text,
            billing_period text, account text, valid_from bigint, valid_until bigint, price bigint)
        WHERE o.meter IS NOT NULL
        ORDER BY e.position
        ON CONFLICT (key) DO NOTHING;
        RETURN QUERY
        WITH posted AS (
            INSERT INTO credit_ledger (operation_key, bucket, delta, reason, created_at)
            SELECT o.operation_key, o.bucket, o.delta, o.reason, at_time
            FROM jsonb_array_elements(operations) WITH ORDINALITY AS e(element, position)
            CROSS JOIN LATERAL jsonb_to_record(e.element) AS o(operation_key text, bucket text, delta bigint, reason text)
            WHERE o.delta <> 0
            ORDER BY e.position
            ON CONFLICT (operation_key) DO NOTHING
            RETURNING credit_ledger.operation_key
        )
        SELECT NULL::subscriptions, NULL::text, NULL::text, NULL::text, NULL::text, NULL::text, NULL::text,
            NULL::timestamptz, NULL::timestamptz, NULL::bigint, NULL::bigint, NULL::text, NULL::entitlement_sources,
            posted.operation_key
        FROM posted;
    END IF;
    posted_key := NULL;
    IF cardinality(status_accounts) > 0 THEN
        RETURN QUERY SELECT s.*, NULL::text FROM account_status_inputs(status_accounts, at_time, true) AS s;
    END IF;
END
$$;
