-- What the credit rules of one subscription read (CreditLedger.snapshot): its cycle buckets and — when it has an
-- owner — the owner's live buckets, one row per bucket and ledger entry (a bucket without entries once, with NULLs),
-- by bucket and then in the order the entries were posted.
-- With a lock key, the owner's lock is taken first (every apply that writes takes it): in a VOLATILE function each
-- statement reads as of its own start, so the read sees what the previous holder committed, and lock and read cost
-- one round trip instead of three (lock, buckets, entries).
-- The plan is made once per connection: generic, and without sequential scans, so that one made while the tables
-- were small keeps finding buckets and entries by index as they grow.
CREATE FUNCTION credit_ledger_snapshot(lock_key text, subscription text, account text, at_time timestamptz)
RETURNS TABLE (bucket_key text, bucket_meter text, bucket_kind text, bucket_subscription text, bucket_billing_period text,
    bucket_account text, bucket_valid_from timestamptz, bucket_valid_until timestamptz, bucket_price bigint,
    entry_operation_key text, entry_delta bigint, entry_reason text)
LANGUAGE plpgsql VOLATILE
SET enable_seqscan = off
SET plan_cache_mode = force_generic_plan
AS $$
BEGIN
    IF lock_key IS NOT NULL THEN
        PERFORM pg_advisory_xact_lock(hashtextextended(lock_key, 0));
    END IF;
    RETURN QUERY
    WITH buckets AS (
        SELECT b.* FROM credit_buckets b WHERE b.original_transaction_id = subscription
        UNION
        SELECT b.* FROM credit_buckets b
        WHERE b.account_id = account AND b.valid_from <= at_time AND (b.valid_until IS NULL OR b.valid_until > at_time)
        UNION
        SELECT b.* FROM subscriptions s JOIN credit_buckets b ON b.original_transaction_id = s.original_transaction_id
        WHERE s.account_id = account AND b.valid_from <= at_time AND (b.valid_until IS NULL OR b.valid_until > at_time)
    )
    SELECT b.key, b.meter, b.kind, b.original_transaction_id, b.billing_period, b.account_id, b.valid_from, b.valid_until,
        b.price, l.operation_key, l.delta, l.reason
    FROM buckets b LEFT JOIN credit_ledger l ON l.bucket = b.key
    ORDER BY b.key, l.id;
END
$$;
