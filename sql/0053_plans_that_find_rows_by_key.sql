-- The generic plans of three statements read a whole table when they were made while it was empty, and kept doing so
-- as it grew. Each joined an array of keys to a table (`JOIN unnest(...) ON` its key columns): planned with no rows in
-- the table (a new install, the benchmarks' empty databases), the cheapest plan scans the table's index from end to
-- end — `enable_seqscan = off` only turned the sequential scan into that — and tests each row against the keys.
-- `usage_requests` grows by a row a spend, `credit_holds` by a row a hold: at N = 0 a group's first statement (its
-- locks and stored answers) took 516 µs a call while the table grew, against 40 µs once autovacuum's statistics had the
-- plan made again (docs/capacity.md, "The spends' reference, run beside them").
-- Each now finds its rows by its keys whatever the statistics: a LATERAL subquery that OFFSET 0 keeps from being
-- pulled up (as sql/0041's live_credit_buckets does), or the ids as the index scan's own condition. Same answers;
-- replacing a function takes no lock a spend or a hold waits for.

CREATE OR REPLACE FUNCTION lock_accounts_and_read_answers(lock_keys text[], request_accounts text[], request_keys text[])
RETURNS TABLE (answer_account text, answer_key text, answer_meter text, answer_amount bigint, answer_text text)
LANGUAGE plpgsql VOLATILE
SET enable_seqscan = off
SET plan_cache_mode = force_generic_plan
AS $$
BEGIN
    PERFORM count(pg_advisory_xact_lock(hashtextextended(k.key, 0)))
    FROM (SELECT key FROM unnest(lock_keys) WITH ORDINALITY AS l(key, position) ORDER BY position) AS k;
    RETURN QUERY
    SELECT u.account_id, u.idempotency_key, u.meter, u.amount, u.answer::text
    FROM unnest(request_accounts, request_keys) AS r(account, key)
    CROSS JOIN LATERAL (
        SELECT * FROM usage_requests s WHERE s.account_id = r.account AND s.idempotency_key = r.key OFFSET 0
    ) AS u;
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
BEGIN
    -- The locks of the group's accounts, those named and those of the holds named by id, in byte order (sql/0037).
    PERFORM count(pg_advisory_xact_lock(hashtextextended('account:' || a.account, 0)))
    FROM (
        SELECT DISTINCT account COLLATE "C" AS account FROM (
            SELECT unnest(lock_accounts) UNION ALL SELECT h.account_id FROM credit_holds h WHERE h.id = ANY(hold_ids)
        ) AS named(account)
        ORDER BY 1
    ) AS a;
    -- A statement of its own after the locks: it sees what the previous holder of a lock committed.
    RETURN QUERY
    WITH named AS (
        SELECT h.* FROM credit_holds h WHERE h.id = ANY(hold_ids)
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
    -- a refund or claw-back took from it, and the claims on where its credits go back (sql/0038's rules).
    LEFT JOIN LATERAL (
        SELECT jsonb_agg(jsonb_build_object('bucket', b.bucket, 'kind', k.kind, 'open', coalesce(k.open, false),
            'carriedTo', carry.bucket,
            'refunded', EXISTS (SELECT 1 FROM credit_ledger r WHERE r.bucket = b.bucket AND r.id > s.id AND r.delta < 0
                    AND (r.operation_key LIKE 'refund:%' OR r.operation_key LIKE 'clawback:%')
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

CREATE OR REPLACE FUNCTION write_hold_group(
    post_keys text[], post_buckets text[], post_deltas bigint[], post_reasons text[], posted_at timestamptz,
    take_ids uuid[], take_accounts text[], take_keys text[], take_meters text[], take_amounts bigint[], take_debits text[],
    take_created timestamptz[], take_expires timestamptz[], take_states text[], take_charged bigint[], take_returned bigint[],
    take_lapsed bigint[], take_ended timestamptz[],
    end_ids uuid[], end_states text[], end_charged bigint[], end_returned bigint[], end_lapsed bigint[], end_at timestamptz[],
    notify_accounts text[])
RETURNS SETOF text
LANGUAGE plpgsql VOLATILE
SET enable_seqscan = off
SET plan_cache_mode = force_generic_plan
SET jit = off
AS $$
DECLARE
    -- Set for this call's writes only, in the body: a function's own SET of a name PostgreSQL does not know needs a
    -- superuser, and the migrations run as the database's owner (MigrationTests).
    named_before text := current_setting('storekeeper.holds_named', true);
BEGIN
    PERFORM set_config('storekeeper.holds_named', 'on', true);
    RETURN QUERY
    WITH posted AS (
        INSERT INTO credit_ledger (operation_key, bucket, delta, reason, created_at)
        SELECT p.key, p.bucket, p.delta, p.reason, posted_at FROM unnest(post_keys, post_buckets, post_deltas, post_reasons) AS p(key, bucket, delta, reason)
        ON CONFLICT (operation_key) DO NOTHING RETURNING operation_key
    ), taken AS (
        INSERT INTO credit_holds (id, account_id, idempotency_key, meter, amount, debits, created_at, expires_at, state, charged, returned,
            lapsed, ended_at)
        SELECT t.id, t.account, t.key, t.meter, t.amount, t.debits::jsonb, t.created, t.expires, t.state, nullif(t.charged, -1),
            nullif(t.returned, -1), nullif(t.lapsed, -1), nullif(t.ended, 'epoch')
        FROM unnest(take_ids, take_accounts, take_keys, take_meters, take_amounts, take_debits, take_created, take_expires, take_states,
            take_charged, take_returned, take_lapsed, take_ended)
            AS t(id, account, key, meter, amount, debits, created, expires, state, charged, returned, lapsed, ended)
    ), ended AS (
        UPDATE credit_holds h SET state = e.state, charged = e.charged, returned = e.returned, lapsed = e.lapsed, ended_at = e.ended
        FROM unnest(end_ids, end_states, end_charged, end_returned, end_lapsed, end_at) AS e(id, state, charged, returned, lapsed, ended)
        -- Still held: `ended_at IS NULL` (sql/0036's CHECK), not `state = 'held'`, which let the planner scan every open
        -- hold through the partial index of due ones instead of finding these by id. `h.id = ANY(end_ids)` makes the ids
        -- the index scan's condition whatever the statistics said when the plan was made (sql/0053).
        WHERE h.id = ANY(end_ids) AND h.id = e.id AND h.ended_at IS NULL
    )
    SELECT posted.operation_key FROM posted;
    -- Another write of holds later in the transaction is heard by the trigger again. (An error above ends the
    -- transaction, or rolls back to a savepoint with the setting as it was.)
    PERFORM set_config('storekeeper.holds_named', coalesce(named_before, ''), true);
    PERFORM pg_notify('storekeeper_account_changed', a.account) FROM unnest(notify_accounts) AS a(account);
END
$$;
