-- A refund of an upgrade takes its carry-over until the refund is reversed, not for good (docs/credits.md, "Where
-- credits go back"). The reads of what became of a bucket since a hold or a spend took from it (sql/0062's
-- credit_buckets_since and lock_accounts_read_hold_group) counted a carry as ended by any refund row that took it,
-- reversed or not; and a carry made for credits out, which its refund's take moved nothing of, was ended by its own
-- reversal (`reversed:carry:…:out`), which nothing undid. So once Apple refunded an upgrade, credits held or spent
-- from the old window before the upgrade lapsed when they came back, even after Apple reversed the refund
-- (UpgradeRefundReversedWhileHeldTests). Now the carry stands while it is not reversed, and the read names the
-- refund's last standing row of it (`carryTakenBy`): what comes back through it while that refund stands goes to
-- the top-up and the refund takes it there, under that row's key (`…:back:<return>`), so the reversal gives it back
-- with the rest; the rules mark the take of a carry of credits out with two rows under the refund's key that net to
-- nothing (SubscriptionCredits.markTaken). Same lookups by key otherwise (sql/0062's OFFSET 0 fences).

CREATE OR REPLACE FUNCTION credit_buckets_since(since_key text, buckets text[]) RETURNS jsonb
LANGUAGE plpgsql STABLE
SET enable_seqscan = off
SET plan_cache_mode = force_generic_plan
AS $$
BEGIN
    RETURN (
        SELECT jsonb_agg(jsonb_build_object('bucket', b.bucket, 'kind', k.kind, 'owner', k.owner,
            'carriedTo', carry.bucket, 'carryTakenBy', carry.taken_by,
            'refunded', coalesce(k.refund_key, refund.key) IS NOT NULL, 'refundedBy', coalesce(k.refund_key, refund.key),
            -- The claims on where the credits go back: the bucket itself, or the top-up its carry went to.
            'claims', (SELECT coalesce(jsonb_agg(jsonb_build_object('key', c.key, 'outstanding', c.outstanding) ORDER BY c.id), '[]'::jsonb)
                 FROM (SELECT c.id, c.operation_key AS key, c.delta + coalesce((SELECT sum(p.delta) FROM credit_ledger p
                            WHERE p.bucket = c.bucket AND p.id > c.id AND p.operation_key LIKE 'claim:%'
                              AND starts_with(p.operation_key, c.operation_key || ':paid:')), 0) AS outstanding
                       FROM credit_ledger c
                       WHERE c.bucket = coalesce(carry.bucket, b.bucket) AND c.id > s.id AND c.operation_key LIKE 'claim:%' AND c.delta > 0
                         AND NOT EXISTS (SELECT 1 FROM credit_ledger x WHERE x.operation_key = 'reversed:' || substr(c.operation_key, 7) OFFSET 0)
                      ) AS c
                 WHERE c.outstanding > 0)))
        FROM (SELECT DISTINCT unnest(buckets) AS bucket) AS b
        CROSS JOIN (SELECT l.id FROM credit_ledger l WHERE l.operation_key = since_key) AS s
        -- The account the bucket is of now: its own, or its subscription's holder (sql/0003's two kinds of owner).
        -- With it, the key of the removal an App Store refund of its period that stands would have written
        -- (refund_key_of_window), read from the same subscription row. Each a lookup by key, fenced by OFFSET 0 (sql/0037).
        LEFT JOIN LATERAL (SELECT cb.kind, coalesce(cb.account_id, o.account_id) AS owner, o.refund_key
                 FROM credit_buckets cb
                 LEFT JOIN LATERAL (SELECT o.account_id, refund_key_of_window(cb.key, cb.kind, cb.billing_period, o) AS refund_key FROM subscriptions o
                          WHERE o.original_transaction_id = cb.original_transaction_id OFFSET 0) AS o ON true
                 WHERE cb.key = b.bucket OFFSET 0) AS k ON true
        -- The first row of a refund that took from the bucket since and stands (not reversed): a hold's end or a spend
        -- given back posts what the refund takes of what comes back under its key (CreditHold.refundTakes). An
        -- aggregate over the bucket's few refund rows (credit_ledger_takebacks), not ORDER BY id LIMIT 1, which a
        -- generic plan could serve by walking the whole ledger's primary key.
        LEFT JOIN LATERAL (SELECT (array_agg(r.operation_key ORDER BY r.id))[1] AS key FROM credit_ledger r
                 WHERE r.bucket = b.bucket AND r.id > s.id AND r.delta < 0 AND r.operation_key LIKE 'refund:%'
                   AND NOT EXISTS (SELECT 1 FROM credit_ledger x WHERE x.operation_key = 'reversed:' || r.operation_key OFFSET 0)) AS refund ON true
        -- The top-up an upgrade carried the bucket's unspent credits to since, while that carry stands (not reversed),
        -- and the last row of a refund of the upgrade that took the carry and stands (`refund:<stamp>:carry:…:in`, not
        -- reversed): what comes back through the carry then is that refund's to take (CreditHold.refundTakes).
        LEFT JOIN LATERAL (SELECT i.bucket, taken.key AS taken_by FROM credit_ledger o
                 CROSS JOIN LATERAL (SELECT i.id, i.bucket, i.operation_key FROM credit_ledger i
                          WHERE i.operation_key = left(o.operation_key, -3) || 'in' OFFSET 0) AS i
                 LEFT JOIN LATERAL (SELECT (array_agg(r.operation_key ORDER BY r.id DESC))[1] AS key FROM credit_ledger r
                          WHERE r.bucket = i.bucket AND r.id > i.id AND r.operation_key LIKE 'refund:%'
                            AND right(r.operation_key, length(i.operation_key) + 1) = ':' || i.operation_key
                            AND NOT EXISTS (SELECT 1 FROM credit_ledger x WHERE x.operation_key = 'reversed:' || r.operation_key OFFSET 0)) AS taken ON true
                 WHERE o.bucket = b.bucket AND o.operation_key LIKE 'carry:%:out' AND o.id > s.id
                   AND NOT EXISTS (SELECT 1 FROM credit_ledger x WHERE x.operation_key IN ('reversed:' || i.operation_key, 'reversed:' || o.operation_key) OFFSET 0)
                 ORDER BY o.id DESC LIMIT 1) AS carry ON true
    );
END
$$;

CREATE OR REPLACE FUNCTION lock_accounts_read_hold_group(lock_accounts text[], hold_ids uuid[], key_accounts text[], keys text[], taking text[],
    at_time timestamptz)
RETURNS TABLE (subscription subscriptions, bucket_key text, bucket_meter text, bucket_kind text, bucket_subscription text,
    bucket_billing_period text, bucket_account text, bucket_valid_from timestamptz, bucket_valid_until timestamptz,
    bucket_price bigint, bucket_balance bigint, bucket_owner text, source entitlement_sources, hold credit_holds, since_hold jsonb)
LANGUAGE plpgsql VOLATILE
SET enable_seqscan = off
SET plan_cache_mode = force_generic_plan
-- The generic plan's estimates (a hundred debits a hold) pass jit_above_cost: compiling it took 40 ms a call.
SET jit = off
AS $$
DECLARE
    locked text[];
BEGIN
    -- The locks of the group's accounts, those named and those of the holds named by id, in byte order (sql/0037).
    SELECT coalesce(array_agg(a.account ORDER BY a.account), '{}') INTO locked
    FROM (
        SELECT DISTINCT account COLLATE "C" AS account FROM (
            SELECT unnest(lock_accounts) UNION ALL SELECT h.account_id FROM credit_holds h WHERE h.id = ANY(hold_ids)
        ) AS named(account)
    ) AS a;
    PERFORM count(pg_advisory_xact_lock(hashtextextended('account:' || l.account, 0)))
    FROM (SELECT account FROM unnest(locked) WITH ORDINALITY AS l(account, position) ORDER BY position) AS l;
    -- A statement of its own after the locks: it sees what the previous holder of a lock committed.
    RETURN QUERY
    WITH named AS (
        -- A hold named by id is read only under an account whose lock the group holds: its account was read before
        -- the wait, and an erasure that held the lock meanwhile moved it to the pseudonym, whose lock this group does
        -- not hold. Another end of it (the expiry job's, a retry's) takes that lock.
        SELECT h.* FROM credit_holds h WHERE h.id = ANY(hold_ids) AND h.account_id = ANY(locked)
        UNION
        SELECT h.* FROM unnest(key_accounts, keys) AS k(account, key)
        CROSS JOIN LATERAL (
            SELECT * FROM credit_holds c WHERE c.account_id = k.account AND c.idempotency_key = k.key OFFSET 0
        ) AS h
    )
    SELECT NULL::subscriptions, NULL::text, NULL::text, NULL::text, NULL::text, NULL::text, NULL::text, NULL::timestamptz,
        NULL::timestamptz, NULL::bigint, NULL::bigint, NULL::text, NULL::entitlement_sources, n::credit_holds, since.buckets
    FROM named n
    -- While held: per bucket it took from, its kind, whether it is open, the top-up a carry took its credits to, whether
    -- a refund took from it (not a claw-back: sql/0057) or, an App Store window, its period stands refunded (sql/0060),
    -- and the claims on where its credits go back (sql/0038's rules).
    LEFT JOIN LATERAL (
        SELECT jsonb_agg(jsonb_build_object('bucket', b.bucket, 'kind', k.kind, 'open', coalesce(k.open AND k.owner = n.account_id, false), 'owner', k.owner,
            'carriedTo', carry.bucket, 'carryTakenBy', carry.taken_by,
            'refunded', coalesce(k.refund_key, refund.key) IS NOT NULL, 'refundedBy', coalesce(k.refund_key, refund.key),
            -- The claims on where the credits go back: the bucket itself, or the top-up its carry went to.
            'claims', (SELECT coalesce(jsonb_agg(jsonb_build_object('key', c.key, 'outstanding', c.outstanding) ORDER BY c.id), '[]'::jsonb)
                 FROM (SELECT c.id, c.operation_key AS key, c.delta + coalesce((SELECT sum(p.delta) FROM credit_ledger p
                            WHERE p.bucket = c.bucket AND p.id > c.id AND p.operation_key LIKE 'claim:%'
                              AND starts_with(p.operation_key, c.operation_key || ':paid:')), 0) AS outstanding
                       FROM credit_ledger c
                       WHERE c.bucket = coalesce(carry.bucket, b.bucket) AND c.id > s.id AND c.operation_key LIKE 'claim:%' AND c.delta > 0
                         AND NOT EXISTS (SELECT 1 FROM credit_ledger x WHERE x.operation_key = 'reversed:' || substr(c.operation_key, 7) OFFSET 0)
                      ) AS c
                 WHERE c.outstanding > 0)))
        FROM (SELECT DISTINCT d->>'bucket' AS bucket FROM jsonb_array_elements(n.debits) AS d) AS b
        CROSS JOIN (SELECT l.id FROM credit_ledger l WHERE l.operation_key = 'hold:' || n.id::text || ':0') AS s
        -- A bucket is an account's own or a subscription's, never both (sql/0003's CHECKs): the owner is one or the other,
        -- as sql/0014's two branches have it. OFFSET 0 keeps this a lookup by key per bucket: flattened into a join, a
        -- generic plan may hash every bucket there is for each call (sql/0037).
        LEFT JOIN LATERAL (SELECT cb.kind, cb.valid_from <= at_time AND (cb.valid_until IS NULL OR cb.valid_until > at_time) AS open,
                     coalesce(cb.account_id, o.account_id) AS owner, o.refund_key
                 FROM credit_buckets cb
                 LEFT JOIN LATERAL (SELECT o.account_id, refund_key_of_window(cb.key, cb.kind, cb.billing_period, o) AS refund_key FROM subscriptions o
                          WHERE o.original_transaction_id = cb.original_transaction_id OFFSET 0) AS o ON true
                 WHERE cb.key = b.bucket OFFSET 0) AS k ON true
        -- The first row of a refund that took from the bucket since and stands (not reversed): a hold's end or a spend
        -- given back posts what the refund takes of what comes back under its key (CreditHold.refundTakes). An
        -- aggregate over the bucket's few refund rows (credit_ledger_takebacks), not ORDER BY id LIMIT 1, which a
        -- generic plan could serve by walking the whole ledger's primary key.
        LEFT JOIN LATERAL (SELECT (array_agg(r.operation_key ORDER BY r.id))[1] AS key FROM credit_ledger r
                 WHERE r.bucket = b.bucket AND r.id > s.id AND r.delta < 0 AND r.operation_key LIKE 'refund:%'
                   AND NOT EXISTS (SELECT 1 FROM credit_ledger x WHERE x.operation_key = 'reversed:' || r.operation_key OFFSET 0)) AS refund ON true
        -- The top-up an upgrade carried the bucket's unspent credits to since, while that carry stands (not reversed),
        -- and the last row of a refund of the upgrade that took the carry and stands (`refund:<stamp>:carry:…:in`, not
        -- reversed): what comes back through the carry then is that refund's to take (CreditHold.refundTakes).
        LEFT JOIN LATERAL (SELECT i.bucket, taken.key AS taken_by FROM credit_ledger o
                 CROSS JOIN LATERAL (SELECT i.id, i.bucket, i.operation_key FROM credit_ledger i
                          WHERE i.operation_key = left(o.operation_key, -3) || 'in' OFFSET 0) AS i
                 LEFT JOIN LATERAL (SELECT (array_agg(r.operation_key ORDER BY r.id DESC))[1] AS key FROM credit_ledger r
                          WHERE r.bucket = i.bucket AND r.id > i.id AND r.operation_key LIKE 'refund:%'
                            AND right(r.operation_key, length(i.operation_key) + 1) = ':' || i.operation_key
                            AND NOT EXISTS (SELECT 1 FROM credit_ledger x WHERE x.operation_key = 'reversed:' || r.operation_key OFFSET 0)) AS taken ON true
                 WHERE o.bucket = b.bucket AND o.operation_key LIKE 'carry:%:out' AND o.id > s.id
                   AND NOT EXISTS (SELECT 1 FROM credit_ledger x WHERE x.operation_key IN ('reversed:' || i.operation_key, 'reversed:' || o.operation_key) OFFSET 0)
                 ORDER BY o.id DESC LIMIT 1) AS carry ON true
        WHERE n.state = 'held'
    ) AS since(buckets) ON true;
    IF cardinality(taking) > 0 THEN
        RETURN QUERY SELECT s.*, NULL::credit_holds, NULL::jsonb FROM account_status_inputs(taking, at_time, false) AS s;
    END IF;
END
$$;
