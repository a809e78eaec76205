-- Claims (issue 53): a top-up's refund takes all it owes (`refund:…`, −owed) and, when credits of the bucket are out
-- in holds or in spends given back later, gives the shortfall back as a claim row (`claim:refund:…`, +short), so the
-- bucket loses what it has. Credits of a debit made before the claim that come back to the bucket pay it first,
-- each payment a row `claim:refund:…:paid:<payer>` (−paid); a reversal of the refund undoes every one of those rows.
-- (CreditClaims, HoldSettlement.)
--
-- The read of what became of a hold's (or a spend's) buckets since its first debit gains, per bucket, the claims made
-- since and still unpaid on where its credits go back (the bucket, or the top-up of a carry standing), oldest first:
-- `claims: [{key, outstanding}]`.
--
-- Rollout: stop the `work` and `serve` processes of the release before this one before migrating. They know no claims:
-- one would reverse a refund without undoing its claim (a gift of what the claim still had) and give back held or
-- spent credits in full past a claim (docs/operations.md, "Running in production").
CREATE INDEX credit_ledger_claims ON credit_ledger (bucket, id) WHERE operation_key LIKE 'claim:%';

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
