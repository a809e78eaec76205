-- Entitlement sources other than a store's subscriptions (issue "Entitlements from every source"): operators' grants
-- and one-time purchases (a store's non-consumables and non-renewing subscriptions). What they entitle and until when
-- is derived from these facts and the catalogue (TierCatalogue.source(of:at:)); their credit windows are buckets of
-- kind `entitlement`, owned by the account, keyed `source:<id>:w<k>:<meter>` with `billing_period` = the source's id.
CREATE TABLE entitlement_sources (
    id                text PRIMARY KEY,      -- a grant's id (UUID), or the purchase's transaction id
    kind              text NOT NULL CHECK (kind IN ('grant', 'purchase')),
    store             text NOT NULL,         -- operator | app_store
    account_id        text,                  -- NULL: a purchase no account has claimed yet
    product_id        text,                  -- purchases
    tier              text,                  -- grants
    starts_at         timestamptz NOT NULL,  -- the purchase, or the grant's start
    ends_at           timestamptz,           -- a grant's end as asked; NULL: for good (purchases: their product decides)
    ended_at          timestamptz,           -- ended early: by an operator, a refund, a revocation
    end_reason        text,                  -- ENDED_BY_OPERATOR | REFUND | REVOKE
    environment       text,
    ownership         text,                  -- PURCHASED | FAMILY_SHARED
    reason            text,                  -- the operator's reason for a grant
    created_by        text,
    signed_date       bigint,                -- purchases: the store's signing time of the version held
    request_key       text,                  -- grants: the operator's idempotency key, so a retried request grants once
    created_at        timestamptz NOT NULL DEFAULT now(),
    CHECK ((kind = 'grant') = (tier IS NOT NULL)),
    CHECK ((kind = 'purchase') = (product_id IS NOT NULL))
);
CREATE INDEX entitlement_sources_account ON entitlement_sources (account_id, created_at);
CREATE UNIQUE INDEX entitlement_sources_request ON entitlement_sources (account_id, request_key) WHERE request_key IS NOT NULL;

ALTER TABLE credit_buckets DROP CONSTRAINT credit_buckets_kind_check;
ALTER TABLE credit_buckets ADD CONSTRAINT credit_buckets_kind_check CHECK (kind IN ('cycle', 'topup', 'daily', 'free', 'entitlement'));
CREATE INDEX credit_buckets_entitlement_source ON credit_buckets (billing_period) WHERE kind = 'entitlement';

-- A source's change changes its account's status: `serve` drops it from the status cache (sql/0012).
CREATE TRIGGER entitlement_sources_inserted AFTER INSERT ON entitlement_sources REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION storekeeper_notify_subscription_accounts();
CREATE TRIGGER entitlement_sources_updated AFTER UPDATE ON entitlement_sources REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION storekeeper_notify_subscription_accounts();

-- The status inputs gain the accounts' sources that have not ended by `at_time`: one more kind of row, in the same
-- round trip (sql/0017, sql/0021; their row type changes, so both are made again).
DROP FUNCTION post_credit_operations(jsonb, text[], timestamptz);
DROP FUNCTION account_status_inputs(text[], timestamptz, boolean);

CREATE FUNCTION account_status_inputs(accounts text[], at_time timestamptz, or_later boolean)
RETURNS TABLE (subscription subscriptions, bucket_key text, bucket_meter text, bucket_kind text, bucket_subscription text,
    bucket_billing_period text, bucket_account text, bucket_valid_from timestamptz, bucket_valid_until timestamptz,
    bucket_price bigint, bucket_balance bigint, bucket_owner text, source entitlement_sources)
LANGUAGE plpgsql STABLE
SET enable_seqscan = off
SET plan_cache_mode = force_generic_plan
AS $$
BEGIN
    RETURN QUERY
    SELECT s, NULL::text, NULL::text, NULL::text, NULL::text, NULL::text, NULL::text, NULL::timestamptz, NULL::timestamptz,
        NULL::bigint, NULL::bigint, NULL::text, NULL::entitlement_sources
    FROM subscriptions s WHERE s.account_id = ANY(accounts);
    RETURN QUERY
    SELECT NULL::subscriptions, l.*, NULL::entitlement_sources FROM live_credit_buckets(accounts, at_time, or_later) AS l;
    RETURN QUERY
    SELECT NULL::subscriptions, NULL::text, NULL::text, NULL::text, NULL::text, NULL::text, NULL::text, NULL::timestamptz,
        NULL::timestamptz, NULL::bigint, NULL::bigint, NULL::text, e
    FROM entitlement_sources e
    WHERE e.account_id = ANY(accounts) AND (e.ended_at IS NULL OR e.ended_at > at_time) AND (e.ends_at IS NULL OR e.ends_at > at_time);
END
$$;

CREATE FUNCTION post_credit_operations(operations jsonb, status_accounts text[], at_time timestamptz)
RETURNS TABLE (subscription subscriptions, bucket_key text, bucket_meter text, bucket_kind text, bucket_subscription text,
    bucket_billing_period text, bucket_account text, bucket_valid_from timestamptz, bucket_valid_until timestamptz,
    bucket_price bigint, bucket_balance bigint, bucket_owner text, source entitlement_sources, posted_key text)
LANGUAGE plpgsql VOLATILE
SET enable_seqscan = off
SET plan_cache_mode = force_generic_plan
AS $$
#variable_conflict use_column
DECLARE
    op record;
    epoch constant timestamptz := timestamptz '2000-01-01 00:00:00+00';
BEGIN
    FOR op IN
        SELECT o.* FROM jsonb_array_elements(operations) WITH ORDINALITY AS e(element, position)
        CROSS JOIN LATERAL jsonb_to_record(e.element) AS o(kind text, operation_key text, bucket text, delta bigint,
            reason text, meter text, bucket_kind text, subscription text, billing_period text, account text,
            valid_from bigint, valid_until bigint, price bigint)
        ORDER BY e.position
    LOOP
        IF op.kind = 'window_end' THEN
            UPDATE credit_buckets SET valid_until = epoch + op.valid_until * interval '1 microsecond' WHERE key = op.bucket;
            CONTINUE;
        END IF;
        IF op.meter IS NOT NULL THEN
            INSERT INTO credit_buckets (key, meter, kind, original_transaction_id, billing_period, account_id, valid_from,
                valid_until, price)
            VALUES (op.bucket, op.meter, op.bucket_kind, op.subscription, op.billing_period, op.account,
                epoch + op.valid_from * interval '1 microsecond', epoch + op.valid_until * interval '1 microsecond', op.price)
            ON CONFLICT (key) DO NOTHING;
        END IF;
        IF op.delta <> 0 THEN
            INSERT INTO credit_ledger (operation_key, bucket, delta, reason) VALUES (op.operation_key, op.bucket, op.delta, op.reason)
            ON CONFLICT (operation_key) DO NOTHING
            RETURNING operation_key INTO posted_key;
            IF FOUND THEN
                RETURN NEXT;
            END IF;
        END IF;
    END LOOP;
    posted_key := NULL;
    IF cardinality(status_accounts) > 0 THEN
        RETURN QUERY SELECT s.*, NULL::text FROM account_status_inputs(status_accounts, at_time, true) AS s;
    END IF;
END
$$;
