-- A prorated refund of an earlier period no longer closes a window to the credits of holds and spends coming back
-- (issue 53, item 2; found by a review of the hold path). Its claw-back takes a number of credits from the
-- subscription's windows and the account's top-ups; it does not end the window, as a refund of the period in force does
-- (`refund:…`, which takes all that is left). A window a claw-back took from lapsed the held credits when they came
-- back: with 1,000 in the window, a hold of 300 and a claw-back of 500, releasing the hold after the claw-back left 200,
-- before it 500. Now they go back, and what the claw-back could not take is claimed (`claim:clawback:…`,
-- SubscriptionCredits' clawBack) and paid first from the credits of holds and spends made before it that come back, as
-- a top-up refund's claim is (sql/0038): 500 in either order.
--
-- The two reads of what became of a debit's buckets since (a hold's, in the group's first statement; a spend's, for
-- its reversal) say `refunded` only for `refund:` rows now. Same signatures and answers otherwise.
--
-- Rollout: a `work` process of the release before claws back without claims; what it could not take then comes back to
-- the customer when the holds end (as a top-up's did before). Claw-backs already written stay as they are, and their
-- windows open again: holds still open then (a day at most) give their credits back there. As before, a later
-- derivation takes what one of them still owes from the live windows and top-ups it has not taken from (and again what
-- it took from a day's or a grant's month that has ended: those rows are outside what the rules read).
CREATE OR REPLACE FUNCTION credit_buckets_since(since_key text, buckets text[]) RETURNS jsonb
LANGUAGE plpgsql STABLE
SET enable_seqscan = off
SET plan_cache_mode = force_generic_plan
AS $$
BEGIN
    RETURN (
        SELECT jsonb_agg(jsonb_build_object('bucket', b.bucket, 'kind', (SELECT k.kind FROM credit_buckets k WHERE k.key = b.bucket),
            'carriedTo', carry.bucket,
            'refunded', EXISTS (SELECT 1 FROM credit_ledger r WHERE r.bucket = b.bucket AND r.id > s.id AND r.delta < 0
                    AND r.operation_key LIKE 'refund:%'
                    AND NOT EXISTS (SELECT 1 FROM credit_ledger x WHERE x.operation_key = 'reversed:' || r.operation_key)),
            -- The claims on where the credits go back: the bucket itself, or the top-up its carry went to.
            'claims', (SELECT coalesce(jsonb_agg(jsonb_build_object('key', c.key, 'outstanding', c.outstanding) ORDER BY c.id), '[]'::jsonb)
                 FROM (SELECT c.id, c.operation_key AS key, c.delta + coalesce((SELECT sum(p.delta) FROM credit_ledger p
                            WHERE p.bucket = c.bucket AND p.id > c.id AND p.operation_key LIKE 'claim:%'
                              AND starts_with(p.operation_key, c.operation_key || ':paid:')), 0) AS outstanding
                       FROM credit_ledger c
                       WHERE c.bucket = coalesce(carry.bucket, b.bucket) AND c.id > s.id AND c.operation_key LIKE 'claim:%' AND c.delta > 0
                         AND NOT EXISTS (SELECT 1 FROM credit_ledger x WHERE x.operation_key = 'reversed:' || substr(c.operation_key, 7))
                      ) AS c
                 WHERE c.outstanding > 0)))
        FROM (SELECT DISTINCT unnest(buckets) AS bucket) AS b
        CROSS JOIN (SELECT l.id FROM credit_ledger l WHERE l.operation_key = since_key) AS s
        -- The top-up an upgrade carried the bucket's unspent credits to since, while that carry stands (neither
        -- reversed nor its top-up refunded).
        LEFT JOIN LATERAL (SELECT i.bucket FROM credit_ledger o JOIN credit_ledger i ON i.operation_key = left(o.operation_key, -3) || 'in'
                 WHERE o.bucket = b.bucket AND o.operation_key LIKE 'carry:%:out' AND o.id > s.id
                   AND NOT EXISTS (SELECT 1 FROM credit_ledger x WHERE x.operation_key IN ('reversed:' || i.operation_key, 'reversed:' || o.operation_key))
                   AND NOT EXISTS (SELECT 1 FROM credit_ledger r WHERE r.bucket = i.bucket AND r.id > i.id
                       AND r.operation_key LIKE 'refund:%' AND right(r.operation_key, length(i.operation_key) + 1) = ':' || i.operation_key)
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
    -- a refund took from it (not a claw-back: sql/0057), and the claims on where its credits go back (sql/0038's rules).
    LEFT JOIN LATERAL (
        SELECT jsonb_agg(jsonb_build_object('bucket', b.bucket, 'kind', k.kind, 'open', coalesce(k.open, false),
            'carriedTo', carry.bucket,
            'refunded', EXISTS (SELECT 1 FROM credit_ledger r WHERE r.bucket = b.bucket AND r.id > s.id AND r.delta < 0
                    AND r.operation_key LIKE 'refund:%'
                    AND NOT EXISTS (SELECT 1 FROM credit_ledger x WHERE x.operation_key = 'reversed:' || r.operation_key)),
            -- The claims on where the credits go back: the bucket itself, or the top-up its carry went to.
            'claims', (SELECT coalesce(jsonb_agg(jsonb_build_object('key', c.key, 'outstanding', c.outstanding) ORDER BY c.id), '[]'::jsonb)
                 FROM (SELECT c.id, c.operation_key AS key, c.delta + coalesce((SELECT sum(p.delta) FROM credit_ledger p
                            WHERE p.bucket = c.bucket AND p.id > c.id AND p.operation_key LIKE 'claim:%'
                              AND starts_with(p.operation_key, c.operation_key || ':paid:')), 0) AS outstanding
                       FROM credit_ledger c
                       WHERE c.bucket = coalesce(carry.bucket, b.bucket) AND c.id > s.id AND c.operation_key LIKE 'claim:%' AND c.delta > 0
                         AND NOT EXISTS (SELECT 1 FROM credit_ledger x WHERE x.operation_key = 'reversed:' || substr(c.operation_key, 7))
                      ) AS c
                 WHERE c.outstanding > 0)))
        FROM (SELECT DISTINCT d->>'bucket' AS bucket FROM jsonb_array_elements(n.debits) AS d) AS b
        CROSS JOIN (SELECT l.id FROM credit_ledger l WHERE l.operation_key = 'hold:' || n.id::text || ':0') AS s
        -- A bucket is an account's own or a subscription's, never both (sql/0003's CHECKs): the owner is one or the other,
        -- as sql/0014's two branches have it. OFFSET 0 keeps this a lookup by key per bucket: flattened into a join, a
        -- generic plan may hash every bucket there is for each call (sql/0037).
        LEFT JOIN LATERAL (SELECT cb.kind, cb.valid_from <= at_time AND (cb.valid_until IS NULL OR cb.valid_until > at_time)
                     AND coalesce(cb.account_id,
                         (SELECT o.account_id FROM subscriptions o WHERE o.original_transaction_id = cb.original_transaction_id)) = n.account_id
                     AS open
                 FROM credit_buckets cb WHERE cb.key = b.bucket OFFSET 0) AS k ON true
        -- The top-up an upgrade carried the bucket's unspent credits to since, while that carry stands (neither
        -- reversed nor its top-up refunded).
        LEFT JOIN LATERAL (SELECT i.bucket FROM credit_ledger o JOIN credit_ledger i ON i.operation_key = left(o.operation_key, -3) || 'in'
                 WHERE o.bucket = b.bucket AND o.operation_key LIKE 'carry:%:out' AND o.id > s.id
                   AND NOT EXISTS (SELECT 1 FROM credit_ledger x WHERE x.operation_key IN ('reversed:' || i.operation_key, 'reversed:' || o.operation_key))
                   AND NOT EXISTS (SELECT 1 FROM credit_ledger r WHERE r.bucket = i.bucket AND r.id > i.id
                       AND r.operation_key LIKE 'refund:%' AND right(r.operation_key, length(i.operation_key) + 1) = ':' || i.operation_key)
                 ORDER BY o.id DESC LIMIT 1) AS carry ON true
        WHERE n.state = 'held'
    ) AS since(buckets) ON true;
    IF cardinality(taking) > 0 THEN
        RETURN QUERY SELECT s.*, NULL::credit_holds, NULL::jsonb FROM account_status_inputs(taking, at_time, false) AS s;
    END IF;
END
$$;
