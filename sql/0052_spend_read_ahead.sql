-- A first spend from an account reads its pages while it waits for its group (issue 56's cold spends). Every spend of a
-- process runs in the one group transaction in flight (sql/0015, CommitGroup), so the pages a group reads from the disk
-- are read one after another: at a million subscribers a spend from an account not touched for minutes read about ten
-- pages from the disk, and spends at 1,000/s queued behind those reads (docs/capacity.md, "Where a spend at a million
-- reads" and "Reading a first spend's pages ahead").
-- This function reads, on a connection of the spend's own and beside other spends' reads, the pages the group will read
-- and write: the stored answer's key; the first debit's key in the ledger's unique index (the group looks it up, then
-- inserts beside it); the account's subscriptions, live buckets with their balances and entitlement sources (the
-- group's read, sql/0022); and per live bucket of the spend's meter (the ones it can take from) the end of its entries
-- in the ledger's bucket index (where its new row goes: equal keys are kept in the order of their rows), its key (the
-- ledger's foreign key and the NOTIFY trigger of sql/0012) and its subscription by key (that trigger's). It takes no row lock and writes nothing; it returns a count
-- only so that nothing is left unread. A table lock it would wait for (a migration's) ends it after 100 ms: it is only
-- ever ahead of a group that reads the same pages.
CREATE FUNCTION read_spend_pages_ahead(spend_account text, spend_key text, spend_meter text, debit_key_prefix text, at_time timestamptz)
RETURNS bigint
LANGUAGE plpgsql STABLE
SET enable_seqscan = off
SET plan_cache_mode = force_generic_plan
SET jit = off
SET lock_timeout = '100ms'
AS $$
DECLARE
    read bigint;
    inputs bigint;
BEGIN
    SELECT count(*) INTO read FROM usage_requests u WHERE u.account_id = spend_account AND u.idempotency_key = spend_key;
    read := read + (SELECT count(*) FROM credit_ledger l WHERE l.operation_key = debit_key_prefix || ':0');
    -- LIMIT keeps each a lookup per bucket: flattened into a join, the planner's guess of a thousand inputs hashed
    -- every bucket key there is. `<=` with the descending order makes the first a backward scan from the end of the
    -- bucket's entries (with `=` the planner drops the order and scans from their start). Another meter's buckets
    -- are not looked up at all (the meter's test is made before each scan).
    SELECT count(*) + count(r.bucket) + count(b.key) + count(s.original_transaction_id) INTO inputs
    FROM account_status_inputs(ARRAY[spend_account], at_time, false) AS i
    LEFT JOIN LATERAL (
        SELECT l.bucket FROM credit_ledger l WHERE i.bucket_meter = spend_meter AND l.bucket <= i.bucket_key ORDER BY l.bucket DESC LIMIT 1
    ) AS r ON r.bucket = i.bucket_key
    LEFT JOIN LATERAL (
        SELECT c.key FROM credit_buckets c WHERE i.bucket_meter = spend_meter AND c.key = i.bucket_key LIMIT 1
    ) AS b ON true
    LEFT JOIN LATERAL (
        SELECT t.original_transaction_id FROM subscriptions t
        WHERE i.bucket_meter = spend_meter AND t.original_transaction_id = i.bucket_subscription LIMIT 1
    ) AS s ON true;
    RETURN read + inputs;
END
$$;
