-- The first two statements of every group of spends (SpendCredits) in one round trip: the locks of the group's
-- accounts, then the answers already stored under the group's idempotency keys. They cannot be one query — a query
-- reads as of its start, so a read in the query that waited for a lock would miss an answer the previous holder
-- committed meanwhile — but in a VOLATILE function each statement reads as of its own start, after the locks.
-- The locks are taken in the order given (the caller sorts the accounts), as CreditLedger.lockAccount names them.
-- The plan is made once per connection: generic, and without sequential scans, so that one made while
-- `usage_requests` was small keeps probing its primary key as it grows.
CREATE FUNCTION lock_accounts_and_read_answers(lock_keys text[], request_accounts text[], request_keys text[])
RETURNS TABLE (answer_account text, answer_key text, answer_meter text, answer_amount bigint, answer_text text)
LANGUAGE plpgsql VOLATILE
SET enable_seqscan = off
SET plan_cache_mode = force_generic_plan
AS $$
BEGIN
    PERFORM count(pg_advisory_xact_lock(hashtextextended(k.key, 0)))
    FROM (SELECT key FROM unnest(lock_keys) WITH ORDINALITY AS l(key, position) ORDER BY position) AS k;
    RETURN QUERY
    SELECT u.account_id, u.idempotency_key, u.meter, u.amount, u.answer::text FROM usage_requests u
    JOIN unnest(request_accounts, request_keys) AS r(account, key) ON u.account_id = r.account AND u.idempotency_key = r.key;
END
$$;
