-- What became of each of `buckets` since the ledger row `since_key` (a hold's first debit, a spend's): its kind; the
-- top-up an upgrade carried its unspent credits to since, while that carry stands (neither reversed nor its top-up
-- refunded); whether a refund or a prorated refund's claw-back took from it since and was not reversed. The facts
-- HoldSettlement's rule needs to know where credits taken at `since_key` go back (CreditHoldStore.destinations).
-- (The kind is a subquery: as a join, a generic plan hashed every bucket there is for each call.)
CREATE FUNCTION credit_buckets_since(since_key text, buckets text[]) RETURNS jsonb
LANGUAGE plpgsql STABLE
SET enable_seqscan = off
SET plan_cache_mode = force_generic_plan
AS $$
BEGIN
    RETURN (
        SELECT jsonb_agg(jsonb_build_object('bucket', b.bucket, 'kind', (SELECT k.kind FROM credit_buckets k WHERE k.key = b.bucket),
            'carriedTo', (SELECT i.bucket FROM credit_ledger o JOIN credit_ledger i ON i.operation_key = left(o.operation_key, -3) || 'in'
                 WHERE o.bucket = b.bucket AND o.operation_key LIKE 'carry:%:out' AND o.id > s.id
                   AND NOT EXISTS (SELECT 1 FROM credit_ledger x WHERE x.operation_key IN ('reversed:' || i.operation_key, 'reversed:' || o.operation_key))
                   AND NOT EXISTS (SELECT 1 FROM credit_ledger r WHERE r.bucket = i.bucket AND r.id > i.id
                       AND r.operation_key LIKE 'refund:%' AND right(r.operation_key, length(i.operation_key) + 1) = ':' || i.operation_key)
                 ORDER BY o.id DESC LIMIT 1),
            'refunded', EXISTS (SELECT 1 FROM credit_ledger r WHERE r.bucket = b.bucket AND r.id > s.id AND r.delta < 0
                    AND (r.operation_key LIKE 'refund:%' OR r.operation_key LIKE 'clawback:%')
                    AND NOT EXISTS (SELECT 1 FROM credit_ledger x WHERE x.operation_key = 'reversed:' || r.operation_key))))
        FROM (SELECT DISTINCT unnest(buckets) AS bucket) AS b
        CROSS JOIN (SELECT l.id FROM credit_ledger l WHERE l.operation_key = since_key) AS s
    );
END
$$;

-- Holds in groups (issue 53): concurrent holds, settles and releases share one transaction, as spends do
-- (sql/0015). The first two statements of every group in one round trip: the locks of the group's accounts (those
-- named, and those of the holds named by id), then the holds the group names, each still held one with what its
-- buckets became since it was taken (the facts HoldSettlement's rule needs to know where a debit goes back). As in
-- sql/0015, the read is a statement of its own after the locks, so it sees what the previous holder committed.
-- The locks are taken in the byte order of the account ids (COLLATE "C"), the order a spend group's caller sorts
-- them in (AccountID's `<`), so a hold group and a spend group never wait for each other in a circle.
CREATE FUNCTION lock_accounts_and_read_holds(lock_accounts text[], hold_ids uuid[], key_accounts text[], keys text[])
RETURNS TABLE (hold credit_holds, since_hold jsonb)
LANGUAGE plpgsql VOLATILE
SET enable_seqscan = off
SET plan_cache_mode = force_generic_plan
AS $$
BEGIN
    PERFORM count(pg_advisory_xact_lock(hashtextextended('account:' || a.account, 0)))
    FROM (
        SELECT DISTINCT account COLLATE "C" AS account FROM (
            SELECT unnest(lock_accounts) UNION ALL SELECT h.account_id FROM credit_holds h WHERE h.id = ANY(hold_ids)
        ) AS named(account)
        ORDER BY 1
    ) AS a;
    RETURN QUERY
    WITH named AS (
        SELECT h.* FROM credit_holds h WHERE h.id = ANY(hold_ids)
        UNION
        SELECT h.* FROM credit_holds h JOIN unnest(key_accounts, keys) AS k(account, key)
            ON h.account_id = k.account AND h.idempotency_key = k.key
    )
    SELECT n::credit_holds, CASE WHEN n.state = 'held' THEN
        credit_buckets_since('hold:' || n.id::text || ':0', ARRAY(SELECT d->>'bucket' FROM jsonb_array_elements(n.debits) AS d))
    END
    FROM named n;
END
$$;

-- What the read above looks for after a hold, by bucket: refunds and claw-backs, and carries out of a bucket. They
-- are few beside the spends, so these indexes stay small, and a settle reads a handful of rows however many spends
-- the bucket has seen (with only `credit_ledger_bucket` it read all of them).
CREATE INDEX credit_ledger_takebacks ON credit_ledger (bucket, id) WHERE operation_key LIKE 'refund:%' OR operation_key LIKE 'clawback:%';
CREATE INDEX credit_ledger_carries_out ON credit_ledger (bucket, id) WHERE operation_key LIKE 'carry:%:out';

-- The holds whose expiry has come and that are still held, oldest first: what the expiry job sweeps.
CREATE INDEX credit_holds_due ON credit_holds (expires_at) WHERE state = 'held';

-- A spend given back (POST /v1/accounts/{id}/usage/{idempotencyKey}/reverse): when, and what went back and what
-- lapsed; its ledger rows are `<the spend's debit key>:reversed`. `created_at` is now written by the spend (the
-- injected clock's time, from which the window to give it back is counted); the column's default stays for rows
-- a release before this one writes during a rollout.
ALTER TABLE usage_requests ADD COLUMN reversed_at timestamptz, ADD COLUMN reversed_returned bigint, ADD COLUMN reversed_lapsed bigint;
