-- A bucket's balance is kept, not summed (issue 53's pace). Every spend group, hold group and status read summed each
-- live bucket's ledger rows (sql/0014), and a bucket gains rows all month: within one `storekeeper-bench api` run spends
-- fell from 3,800/s to 2,300/s as the ledger grew, and after 100,000 holds were taken and released
-- (`storekeeper-bench hold-expiry`) from 3,700/s to 1,100/s with the worker idle. A hold → settle pair posts four rows
-- where a spend posts one, so pairs paid for it four times over.
--
-- `credit_bucket_balances` holds each bucket's sum, kept by the ledger's own triggers, so no writer can forget it and
-- every reader gets it by key. The ledger stays the record: the balance is `sum(delta)` of the bucket's rows at every
-- commit (checked after every test the test harness runs, and pinned by BucketBalanceTests). The triggers are per
-- statement, over its transition table: one upsert per statement, buckets in key order. Writers of a bucket queue on
-- its account's lock before they post (sql/0037; an apply that moves a subscription takes both owners' locks,
-- SubscriptionWriter), so the balance rows' locks add no waiting. A bucket with no row has no ledger rows: balance 0.
CREATE TABLE credit_bucket_balances (
    -- The ledger's rows name existing buckets (sql/0003), so a balance does too; it goes with its bucket (an erasure
    -- moves the rows to the pseudonym's bucket, then deletes the old one).
    bucket  text PRIMARY KEY REFERENCES credit_buckets (key) ON DELETE CASCADE,
    balance bigint NOT NULL
) WITH (fillfactor = 50); -- room on each page for the updated row: the update is HOT, the key index untouched.

-- What the statement posted, by bucket (a settle's charge and its offset net to nothing: no update). New rows name
-- buckets that exist (the ledger's foreign key).
CREATE FUNCTION credit_ledger_posted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO credit_bucket_balances AS b (bucket, balance)
    SELECT p.bucket, sum(p.delta) FROM posted p GROUP BY p.bucket HAVING sum(p.delta) <> 0 ORDER BY p.bucket
    ON CONFLICT (bucket) DO UPDATE SET balance = b.balance + excluded.balance;
    RETURN NULL;
END
$$;

-- What an update changed (an erasure moves rows to the pseudonym's buckets), by bucket: the rows after less the rows
-- before. (A trigger with transition tables cannot name columns: a statement that changes only operation keys nets
-- to nothing.)
CREATE FUNCTION credit_ledger_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO credit_bucket_balances AS b (bucket, balance)
    SELECT c.bucket, sum(c.delta) FROM (
        SELECT a.bucket, a.delta FROM after_rows a
        UNION ALL
        SELECT r.bucket, -r.delta FROM before_rows r
    ) AS c
    GROUP BY c.bucket HAVING sum(c.delta) <> 0 ORDER BY c.bucket
    ON CONFLICT (bucket) DO UPDATE SET balance = b.balance + excluded.balance;
    RETURN NULL;
END
$$;

-- What a delete took away, by bucket.
CREATE FUNCTION credit_ledger_removed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO credit_bucket_balances AS b (bucket, balance)
    SELECT r.bucket, -sum(r.delta) FROM before_rows r
    GROUP BY r.bucket HAVING sum(r.delta) <> 0 ORDER BY r.bucket
    ON CONFLICT (bucket) DO UPDATE SET balance = b.balance + excluded.balance;
    RETURN NULL;
END
$$;

CREATE FUNCTION credit_ledger_truncated() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM credit_bucket_balances;
    RETURN NULL;
END
$$;

CREATE TRIGGER credit_ledger_balances_posted AFTER INSERT ON credit_ledger
    REFERENCING NEW TABLE AS posted FOR EACH STATEMENT EXECUTE FUNCTION credit_ledger_posted();
CREATE TRIGGER credit_ledger_balances_changed AFTER UPDATE ON credit_ledger
    REFERENCING OLD TABLE AS before_rows NEW TABLE AS after_rows FOR EACH STATEMENT EXECUTE FUNCTION credit_ledger_changed();
CREATE TRIGGER credit_ledger_balances_removed AFTER DELETE ON credit_ledger
    REFERENCING OLD TABLE AS before_rows FOR EACH STATEMENT EXECUTE FUNCTION credit_ledger_removed();
CREATE TRIGGER credit_ledger_balances_truncated AFTER TRUNCATE ON credit_ledger
    FOR EACH STATEMENT EXECUTE FUNCTION credit_ledger_truncated();

-- The balances of what is stored already (the triggers above hold the ledger's writers until this commits: 4.6 s for
-- 5,000,000 rows in 500,000 buckets on a 2-core machine, docs/operations.md).
INSERT INTO credit_bucket_balances (bucket, balance)
SELECT bucket, sum(delta) FROM credit_ledger GROUP BY bucket;

-- sql/0014's read, the balance by key instead of a sum over the bucket's rows. Same signature: a `serve` of the
-- release before, during a rollout, reads it too.
CREATE OR REPLACE FUNCTION live_credit_buckets(accounts text[], at_time timestamptz, or_later boolean)
RETURNS TABLE (bucket_key text, bucket_meter text, bucket_kind text, bucket_subscription text, bucket_billing_period text,
    bucket_account text, bucket_valid_from timestamptz, bucket_valid_until timestamptz, bucket_price bigint,
    bucket_balance bigint, bucket_owner text)
LANGUAGE plpgsql STABLE
SET enable_seqscan = off
SET plan_cache_mode = force_generic_plan
AS $$
BEGIN
    RETURN QUERY
    SELECT b.key, b.meter, b.kind, b.original_transaction_id, b.billing_period, b.account_id, b.valid_from,
        b.valid_until, b.price, coalesce((SELECT s.balance FROM credit_bucket_balances s WHERE s.bucket = b.key), 0)::bigint,
        b.owner
    FROM (
        SELECT a.*, a.account_id AS owner FROM credit_buckets a WHERE a.account_id = ANY(accounts)
        UNION ALL
        SELECT c.*, s.account_id FROM subscriptions s CROSS JOIN LATERAL (
            SELECT * FROM credit_buckets cb WHERE cb.original_transaction_id = s.original_transaction_id OFFSET 0
        ) c
        WHERE s.account_id = ANY(accounts)
    ) b
    WHERE (or_later OR b.valid_from <= at_time) AND (b.valid_until IS NULL OR b.valid_until > at_time);
END
$$;
