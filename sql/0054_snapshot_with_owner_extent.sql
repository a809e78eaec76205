-- The events of an apply carry the owner's status as the apply leaves it (issue 56, part 3). It was read again after the
-- credit posts (`post_credit_operations`' status read, sql/0022): subscriptions, live buckets with their balances and
-- grants of every account named, in wide rows. In `storekeeper-bench e2e`, where every notification is a first purchase,
-- not reading it took 13–19 % off the CPU `work` and PostgreSQL spend draining, at the medians of two A/B series
-- (docs/capacity.md, "The status an apply's events carry, known instead of read again").
--
-- For most owners the apply knows that status already: the derivation's state is the owner's one subscription, and
-- the snapshot the credit rules read (this subscription's buckets, the owner's live ones, every entry of each) is, with
-- the posts, every bucket the read would find. What it cannot know is whether the owner has more: another subscription,
-- a grant or purchase in force, a bucket of its own that opens later. This snapshot says so, read after the owner's lock
-- like the rest, so no apply of another subscription of the owner can slip in between (SubscriptionWriter falls back
-- to the read whenever it is true). Then sql/0016's `credit_ledger_snapshot` (which the release before still calls
-- itself), always with at least one row: with no bucket, one of NULLs carrying the answer.
CREATE FUNCTION credit_ledger_snapshot_with_owner_extent(lock_key text, subscription text, account text, at_time timestamptz)
RETURNS TABLE (bucket_key text, bucket_meter text, bucket_kind text, bucket_subscription text, bucket_billing_period text,
    bucket_account text, bucket_valid_from timestamptz, bucket_valid_until timestamptz, bucket_price bigint,
    entry_operation_key text, entry_delta bigint, entry_reason text, owner_has_more boolean)
LANGUAGE plpgsql VOLATILE
SET enable_seqscan = off
SET plan_cache_mode = force_generic_plan
AS $$
DECLARE
    more boolean;
BEGIN
    IF lock_key IS NOT NULL THEN
        PERFORM pg_advisory_xact_lock(hashtextextended(lock_key, 0));
    END IF;
    -- After the lock, as sql/0017's `account_status_inputs` would find them: another subscription, a grant or purchase
    -- not ended, a bucket of the account's own live later than `at_time` (the snapshot has those live now).
    more := account IS NULL
        OR EXISTS (SELECT 1 FROM subscriptions s WHERE s.account_id = account AND s.original_transaction_id <> subscription)
        OR EXISTS (SELECT 1 FROM entitlement_sources e WHERE e.account_id = account
            AND (e.ended_at IS NULL OR e.ended_at > at_time) AND (e.ends_at IS NULL OR e.ends_at > at_time))
        OR EXISTS (SELECT 1 FROM credit_buckets b WHERE b.account_id = account AND b.valid_from > at_time
            AND (b.valid_until IS NULL OR b.valid_until > at_time));
    -- sql/0016's read, the lock held already; its rows come in its order (a function's rows, joined to one).
    RETURN QUERY
    SELECT snapshot.*, more
    FROM (SELECT 1) AS extent
    LEFT JOIN credit_ledger_snapshot(NULL, subscription, account, at_time) AS snapshot ON true;
END
$$;
