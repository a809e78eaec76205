-- A ledger row no longer takes a lock on its bucket (issue 53's pace, issue 56's cold spends). sql/0003's foreign key
-- on `credit_ledger.bucket` checked every row as it was written with `SELECT … FROM credit_buckets … FOR KEY SHARE`:
-- a probe of the buckets' key and a lock written into the bucket's row — a WAL record, and the bucket's page dirtied (a
-- full-page image after each checkpoint) — for every spend, hold, settle and grant (docs/capacity.md, "Ledger rows
-- without a lock on their bucket").
--
-- What it guaranteed is kept, checked where it is cheap:
-- - A row posted names a bucket that exists. The first row a bucket is posted names it in `credit_bucket_balances`
--   (sql/0041), whose own foreign key is checked then, once; a bucket's deletion takes its balance row with it (ON
--   DELETE CASCADE). So a statement whose rows change a bucket's balance either updates a balance row, whose bucket
--   exists, or inserts one, and is refused for a bucket that does not. Below, the insert trigger also looks up the
--   buckets whose rows in the statement net to nothing (a whole settle's charge and its offset), which no balance
--   upsert checks; and the update trigger (an erasure's move of rows) every bucket the rows now name.
-- - A bucket that still has rows is not deleted: a statement trigger on `credit_buckets` refuses it.
-- These look without locking: a writer of a bucket and the only deleter of buckets (an erasure) hold the account's
-- lock (sql/0037, ErasedAccounts), so no deletion can come between a check and its commit. Refusals are
-- `foreign_key_violation`, as before.
ALTER TABLE credit_ledger DROP CONSTRAINT IF EXISTS credit_ledger_bucket_fkey;

CREATE OR REPLACE FUNCTION credit_ledger_posted() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    missing text;
BEGIN
    WITH sums AS (
        SELECT p.bucket, sum(p.delta) AS delta FROM posted p GROUP BY p.bucket
    ), kept AS (
        INSERT INTO credit_bucket_balances AS b (bucket, balance)
        SELECT s.bucket, s.delta FROM sums s WHERE s.delta <> 0 ORDER BY s.bucket
        ON CONFLICT (bucket) DO UPDATE SET balance = b.balance + excluded.balance
    )
    SELECT s.bucket INTO missing FROM sums s
    WHERE s.delta = 0 AND NOT EXISTS (SELECT 1 FROM credit_buckets k WHERE k.key = s.bucket) LIMIT 1;
    IF missing IS NOT NULL THEN
        RAISE EXCEPTION 'a ledger row names the bucket %, which does not exist', missing USING ERRCODE = 'foreign_key_violation';
    END IF;
    RETURN NULL;
END
$$;

CREATE OR REPLACE FUNCTION credit_ledger_changed() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    missing text;
BEGIN
    INSERT INTO credit_bucket_balances AS b (bucket, balance)
    SELECT c.bucket, sum(c.delta) FROM (
        SELECT a.bucket, a.delta FROM after_rows a
        UNION ALL
        SELECT r.bucket, -r.delta FROM before_rows r
    ) AS c
    GROUP BY c.bucket HAVING sum(c.delta) <> 0 ORDER BY c.bucket
    ON CONFLICT (bucket) DO UPDATE SET balance = b.balance + excluded.balance;
    SELECT a.bucket INTO missing FROM after_rows a WHERE NOT EXISTS (SELECT 1 FROM credit_buckets k WHERE k.key = a.bucket) LIMIT 1;
    IF missing IS NOT NULL THEN
        RAISE EXCEPTION 'a ledger row names the bucket %, which does not exist', missing USING ERRCODE = 'foreign_key_violation';
    END IF;
    RETURN NULL;
END
$$;

CREATE FUNCTION credit_buckets_removed() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    kept text;
BEGIN
    SELECT o.key INTO kept FROM removed o WHERE EXISTS (SELECT 1 FROM credit_ledger l WHERE l.bucket = o.key) LIMIT 1;
    IF kept IS NOT NULL THEN
        RAISE EXCEPTION 'the bucket % still has ledger rows', kept USING ERRCODE = 'foreign_key_violation';
    END IF;
    RETURN NULL;
END
$$;

CREATE TRIGGER credit_buckets_removed AFTER DELETE ON credit_buckets
    REFERENCING OLD TABLE AS removed FOR EACH STATEMENT EXECUTE FUNCTION credit_buckets_removed();
