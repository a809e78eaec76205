-- A ledger row no longer takes a lock on its bucket (issue 53's pace, issue 56's cold spends). sql/0003's foreign key
-- on `credit_ledger.bucket` checked every row as it was written with `SELECT … FROM credit_buckets … FOR KEY SHARE`:
-- a probe of the buckets' key and a lock written into the bucket's row — a WAL record, and the bucket's page dirtied (a
-- full-page image after each checkpoint) — for every spend, hold, settle and grant (docs/capacity.md, "Ledger rows
-- without a lock on their bucket").
--
-- What it guaranteed — a ledger row names a bucket that exists, and a bucket with rows stays — is kept, by the row
-- every posting writes or locks already:
-- - The ledger's insert and update triggers upsert the kept balance (sql/0041) of every bucket their rows name, whose
--   own foreign key to `credit_buckets` goes with the bucket (ON DELETE CASCADE). Each such balance row is inserted —
--   the foreign key checks the bucket then, and locks it — or updated, or (rows that net to nothing, which sql/0041
--   left out) locked without being written: a bucket with a balance row exists, and its deletion, which must delete
--   that row, waits for the posting's commit.
-- - A bucket that still has rows is refused deletion, a new key and TRUNCATE by the triggers below, which look the
--   ledger up by its `bucket` index. A deletion's look-up runs after its cascade has waited for any posting in flight
--   to the bucket, and sees that posting's rows because each of its queries takes a new snapshot, as READ COMMITTED
--   has it (every transaction of Storekeeper's is; under REPEATABLE READ it would not see them).
-- Refusals are `foreign_key_violation` (SQLSTATE 23503), as before; the constraint named in the message is the kept
-- balance's, or none.
--
-- Buckets first, as every spend and apply takes them (it reads buckets, then writes the ledger): the drop below needs
-- both, and in the other order it could wait on a spend that waits on it until the lock timeout.
LOCK TABLE credit_buckets, credit_ledger IN ACCESS EXCLUSIVE MODE;

ALTER TABLE credit_ledger DROP CONSTRAINT IF EXISTS credit_ledger_bucket_fkey;

-- sql/0041's, with every bucket the statement posted to in the upsert: those whose rows net to nothing (a whole
-- settle's charge and its offset) have their balance row locked, not written again, or inserted at 0 if it had none.
CREATE OR REPLACE FUNCTION credit_ledger_posted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO credit_bucket_balances AS b (bucket, balance)
    SELECT p.bucket, sum(p.delta) FROM posted p GROUP BY p.bucket ORDER BY p.bucket
    ON CONFLICT (bucket) DO UPDATE SET balance = b.balance + excluded.balance WHERE excluded.balance <> 0;
    RETURN NULL;
END
$$;

-- sql/0041's, with every bucket the rows now name in the upsert, as the insert trigger's: moved rows that net to
-- nothing lock their new bucket's balance row, or insert it at 0 (its key checking the bucket).
CREATE OR REPLACE FUNCTION credit_ledger_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO credit_bucket_balances AS b (bucket, balance)
    SELECT c.bucket, sum(c.delta) FROM (
        SELECT a.bucket, a.delta, true AS named FROM after_rows a
        UNION ALL
        SELECT r.bucket, -r.delta, false FROM before_rows r
    ) AS c
    GROUP BY c.bucket HAVING sum(c.delta) <> 0 OR bool_or(c.named) ORDER BY c.bucket
    ON CONFLICT (bucket) DO UPDATE SET balance = b.balance + excluded.balance WHERE excluded.balance <> 0;
    RETURN NULL;
END
$$;

-- A bucket deleted must have no rows left (an erasure moves them first). The guards run rarely and find nothing when
-- all is well: sequential scans are off, so no plan reads the whole ledger to find no row.
CREATE FUNCTION credit_buckets_removed() RETURNS trigger LANGUAGE plpgsql SET enable_seqscan = off AS $$
DECLARE
    kept text;
BEGIN
    SELECT o.key INTO kept FROM removed o
    CROSS JOIN LATERAL (SELECT 1 FROM credit_ledger l WHERE l.bucket = o.key LIMIT 1 OFFSET 0) AS posted
    LIMIT 1;
    IF kept IS NOT NULL THEN
        RAISE EXCEPTION 'the bucket % still has ledger rows', kept USING ERRCODE = 'foreign_key_violation';
    END IF;
    RETURN NULL;
END
$$;

CREATE TRIGGER credit_buckets_removed AFTER DELETE ON credit_buckets
    REFERENCING OLD TABLE AS removed FOR EACH STATEMENT EXECUTE FUNCTION credit_buckets_removed();

-- Nor given a new key. A row trigger, so that it can name the column: the updates that keep the key (a window's end on
-- every apply that closes one) do not even queue it.
CREATE FUNCTION credit_buckets_rekeyed() RETURNS trigger LANGUAGE plpgsql SET enable_seqscan = off AS $$
BEGIN
    IF EXISTS (SELECT 1 FROM credit_ledger l WHERE l.bucket = OLD.key) THEN
        RAISE EXCEPTION 'the bucket % still has ledger rows', OLD.key USING ERRCODE = 'foreign_key_violation';
    END IF;
    RETURN NULL;
END
$$;

CREATE TRIGGER credit_buckets_rekeyed AFTER UPDATE OF key ON credit_buckets
    FOR EACH ROW WHEN (OLD.key IS DISTINCT FROM NEW.key) EXECUTE FUNCTION credit_buckets_rekeyed();

-- Nor emptied while the ledger has rows (TRUNCATE skips the delete triggers). After it, so that `TRUNCATE
-- credit_ledger, credit_buckets` goes through, as the foreign key let it; an error rolls the TRUNCATE back.
CREATE FUNCTION credit_buckets_truncated() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF EXISTS (SELECT 1 FROM credit_ledger) THEN
        RAISE EXCEPTION 'the buckets still have ledger rows' USING ERRCODE = 'foreign_key_violation';
    END IF;
    RETURN NULL;
END
$$;

CREATE TRIGGER credit_buckets_truncated AFTER TRUNCATE ON credit_buckets
    FOR EACH STATEMENT EXECUTE FUNCTION credit_buckets_truncated();
