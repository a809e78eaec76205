-- A hold group's write costs less (issue 53's pace): one prepared call instead of a statement parsed and planned for
-- every group, and no statement triggers on `credit_holds` on its way.
--
-- sql/0036's triggers told the other processes (`storekeeper_account_changed`, sql/0012) whose holds were taken or
-- ended. They ran after every group's insert and update of holds, each with its transition tables (an update's both
-- old and new rows) and a query over them, for accounts the ledger's own trigger had named already whenever the group
-- posted a row. Same-run A/B, `storekeeper-bench api`, the same binaries and sql/ with and without them, alternating
-- runs, 2026-11-30 08:28–08:55 UTC: pairs 2,089–2,388/s with them (four runs), 2,423–2,506/s without (two); without
-- them and sql/0050's index of ended holds too, 2,356–2,650/s (four): the triggers were the cost, the index was not
-- (docs/capacity.md).
--
-- The group now names its accounts itself (below): those whose holds it took or ended, which covers the holds that post
-- nothing (an unlimited meter's, one whose credits all lapse). Every other writer of holds — a `serve` or `work` of the
-- release before during a rollout, erasure's move of holds to a pseudonym — is still heard: the triggers become a row
-- trigger that stands aside while `storekeeper.holds_named` is `on`, which only `write_hold_group` sets, and only for
-- its own call. A row trigger keeps no transition tables, and its condition is checked as the row is written: nothing
-- is queued for the group's rows. (Dropping it waits for a release that no process of the release before runs
-- beside: docs/operations.md, "Expand, backfill, contract".)
DROP TRIGGER credit_holds_inserted ON credit_holds;
DROP TRIGGER credit_holds_updated ON credit_holds;

CREATE FUNCTION storekeeper_notify_hold_accounts() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    -- An update may move a hold to another account (erasure): both hear of it.
    IF TG_OP = 'UPDATE' AND OLD.account_id IS DISTINCT FROM NEW.account_id THEN
        PERFORM pg_notify('storekeeper_account_changed', OLD.account_id);
    END IF;
    PERFORM pg_notify('storekeeper_account_changed', NEW.account_id);
    RETURN NULL;
END
$$;

CREATE TRIGGER credit_holds_written AFTER INSERT OR UPDATE ON credit_holds FOR EACH ROW
    WHEN (current_setting('storekeeper.holds_named', true) IS DISTINCT FROM 'on')
    EXECUTE FUNCTION storekeeper_notify_hold_accounts();

-- What a group did, in one call (CreditHoldStore.write): its ledger rows (a key posted already is skipped; the keys
-- posted are returned), the holds it took as they stand at its end, the ends of holds taken before (only of those
-- still held), and a NOTIFY per account named (sent at the commit, as a trigger's would be). A plpgsql function keeps
-- its plan for the connection; the plan is the generic one, so seqscans are off (as in sql/0040): a generic plan made
-- while `credit_holds` is small may join the ends by scanning it (docs/capacity.md, "One row fewer per settle").
-- Arrays of optionals do not bind: an outcome not known yet comes as -1 or the epoch.
CREATE FUNCTION write_hold_group(
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
        -- hold through the partial index of due ones instead of finding these by id.
        WHERE h.id = e.id AND h.ended_at IS NULL
    )
    SELECT posted.operation_key FROM posted;
    -- Another write of holds later in the transaction is heard by the trigger again. (An error above ends the
    -- transaction, or rolls back to a savepoint with the setting as it was.)
    PERFORM set_config('storekeeper.holds_named', coalesce(named_before, ''), true);
    PERFORM pg_notify('storekeeper_account_changed', a.account) FROM unnest(notify_accounts) AS a(account);
END
$$;
