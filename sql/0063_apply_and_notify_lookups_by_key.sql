-- An apply's ledger read and the NOTIFY of every ledger insert find their rows by key whatever the statistics their
-- plans were made with (sql/0062's finding, on the hot paths). `credit_ledger_snapshot` (sql/0016), which every apply
-- runs through `credit_ledger_snapshot_with_owner_extent`, joined the owner's subscriptions to their buckets and the
-- buckets to their ledger rows with plain joins: its generic plan made while the tables were empty (a new install, a
-- database restored and not analysed yet, every benchmark's start) read the owner's subscriptions by walking the
-- primary key and merged the buckets with the ledger's whole bucket index — 49,123 blocks an apply at 20,000
-- subscriptions and 120,000 ledger rows — until autovacuum's next ANALYZE had the plan made again. The NOTIFY
-- triggers of sql/0012 (every statement that inserts ledger rows — each spend group, each apply's post — or moves a
-- window) take the caller's planner settings, and planned while `credit_buckets` held a row they scanned it whole:
-- 40,002 rows read there for one ledger row. Each lookup is now a LATERAL subquery fenced by `OFFSET 0`, and the
-- triggers plan without sequential scans, as the functions do: fewer than 60 blocks and 10 rows (KeyLookupPlanTests).
-- Same rows in the same order; replacing a function takes no lock a spend or an apply waits for, and processes of the
-- release before call the same functions.

CREATE OR REPLACE FUNCTION credit_ledger_snapshot(lock_key text, subscription text, account text, at_time timestamptz)
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
        SELECT b.* FROM (SELECT s.original_transaction_id FROM subscriptions s WHERE s.account_id = account OFFSET 0) AS s
        CROSS JOIN LATERAL (SELECT * FROM credit_buckets b WHERE b.original_transaction_id = s.original_transaction_id
            AND b.valid_from <= at_time AND (b.valid_until IS NULL OR b.valid_until > at_time) OFFSET 0) AS b
    )
    SELECT b.key, b.meter, b.kind, b.original_transaction_id, b.billing_period, b.account_id, b.valid_from, b.valid_until,
        b.price, l.operation_key, l.delta, l.reason
    FROM buckets b
    LEFT JOIN LATERAL (SELECT l.id, l.operation_key, l.delta, l.reason FROM credit_ledger l WHERE l.bucket = b.key OFFSET 0) AS l ON true
    ORDER BY b.key, l.id;
END
$$;

CREATE OR REPLACE FUNCTION storekeeper_notify_bucket_accounts() RETURNS trigger LANGUAGE plpgsql
SET enable_seqscan = off
AS $$
BEGIN
    PERFORM pg_notify('storekeeper_account_changed', account_id) FROM (
        SELECT DISTINCT coalesce(b.account_id, s.account_id) AS account_id
        FROM changed_buckets c
        CROSS JOIN LATERAL (SELECT b.account_id, b.original_transaction_id FROM credit_buckets b WHERE b.key = c.key OFFSET 0) AS b
        LEFT JOIN LATERAL (SELECT s.account_id FROM subscriptions s WHERE s.original_transaction_id = b.original_transaction_id OFFSET 0) AS s
            ON true
    ) AS accounts WHERE account_id IS NOT NULL;
    RETURN NULL;
END $$;

CREATE OR REPLACE FUNCTION storekeeper_notify_ledger_accounts() RETURNS trigger LANGUAGE plpgsql
SET enable_seqscan = off
AS $$
BEGIN
    PERFORM pg_notify('storekeeper_account_changed', account_id) FROM (
        SELECT DISTINCT coalesce(b.account_id, s.account_id) AS account_id
        FROM (SELECT DISTINCT bucket FROM new_entries) AS c
        CROSS JOIN LATERAL (SELECT b.account_id, b.original_transaction_id FROM credit_buckets b WHERE b.key = c.bucket OFFSET 0) AS b
        LEFT JOIN LATERAL (SELECT s.account_id FROM subscriptions s WHERE s.original_transaction_id = b.original_transaction_id OFFSET 0) AS s
            ON true
    ) AS accounts WHERE account_id IS NOT NULL;
    RETURN NULL;
END $$;
