-- An erasure left the customer's id in the audit log when an operator's adjustment key held it
-- (`POST /admin/accounts/{id}/credits {"idempotencyKey": "adj-<id>"}`): `credits.adjust` entries keep the key as their
-- `target`, which the erasure rewrote only when it was the id itself, while the ledger's copy of the same key is
-- hashed (ErasedAccounts+Credits: the app's and operators' keys may say who the customer was). The erasure now hashes
-- an adjustment's target as the ledger does (md5), so the entry still matches its ledger row
-- (`adjust:<bytes>:<pseudonym>:<md5>`); other targets are ids Storekeeper made (grants, jobs, events) or the
-- subscription's, and keep the rule of sql/0031.
--
-- Online: functions replaced, and the entries of accounts erased before rewritten the same way (a few rows: the
-- adjustments of erased accounts), with the log's append-only trigger off for this file's transaction only (inserts
-- into the log wait for the file's commit). As every rewrite of the log, it leaves a record no statement of the app can
-- remove: a row in `erasures` per pseudonym whose entries it changed, `erased_by` naming this file. An entry whose key
-- was the id itself already reads the pseudonym (sql/0031's rule); the id is not known any more to hash it, and the
-- pseudonym says nothing of the customer, so it stays.

CREATE FUNCTION erased_operator_action_target(action text, target text, account text, pseudonym text) RETURNS text
LANGUAGE sql IMMUTABLE AS $$
    SELECT CASE WHEN action = 'credits.adjust' THEN md5(target) WHEN target = account THEN pseudonym ELSE target END
$$;

CREATE OR REPLACE FUNCTION operator_actions_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'UPDATE' AND OLD.account_id IS NOT NULL
        AND current_setting('storekeeper.erasure', true) = OLD.account_id || chr(31) || NEW.account_id
        AND erasure_in_this_transaction(NEW.account_id)
        AND NEW.id = OLD.id AND NEW.at = OLD.at AND NEW.operator = OLD.operator AND NEW.role = OLD.role
        AND NEW.action = OLD.action AND NEW.request = OLD.request AND NEW.status = OLD.status
        AND NEW.target IS NOT DISTINCT FROM erased_operator_action_target(OLD.action, OLD.target, OLD.account_id, NEW.account_id)
        AND NEW.before IS NOT DISTINCT FROM erased_operator_action_document(OLD.before, OLD.account_id, NEW.account_id)
        AND NEW.after IS NOT DISTINCT FROM erased_operator_action_document(OLD.after, OLD.account_id, NEW.account_id)
    THEN
        RETURN NEW;
    END IF;
    RAISE EXCEPTION 'operator_actions is append-only: % refused', TG_OP USING ERRCODE = 'insufficient_privilege';
END
$$;

CREATE OR REPLACE FUNCTION erase_operator_actions(account text, pseudonym text) RETURNS bigint LANGUAGE plpgsql SECURITY DEFINER
SET search_path FROM CURRENT AS $$
DECLARE
    changed bigint;
BEGIN
    IF NOT erasure_in_this_transaction(pseudonym) THEN
        RAISE EXCEPTION 'erase_operator_actions: no erasure of this transaction filed that pseudonym' USING ERRCODE = 'insufficient_privilege';
    END IF;
    PERFORM set_config('storekeeper.erasure', account || chr(31) || pseudonym, true);
    UPDATE operator_actions a SET account_id = pseudonym,
        target = erased_operator_action_target(a.action, a.target, account, pseudonym),
        before = erased_operator_action_document(a.before, account, pseudonym),
        after = erased_operator_action_document(a.after, account, pseudonym)
    WHERE a.account_id = account;
    GET DIAGNOSTICS changed = ROW_COUNT;
    PERFORM set_config('storekeeper.erasure', '', true);
    RETURN changed;
END
$$;

-- Accounts erased before this file: their entries name the pseudonym; their adjustment keys are hashed now.
ALTER TABLE operator_actions DISABLE TRIGGER operator_actions_no_change;
WITH hashed AS (
    UPDATE operator_actions SET target = md5(target)
    WHERE action = 'credits.adjust' AND target IS NOT NULL AND target <> account_id
        AND account_id IN (SELECT pseudonym FROM erased_accounts)
    RETURNING account_id)
INSERT INTO erasures (pseudonym, erased_at, erased_by)
    SELECT DISTINCT account_id, now(), 'sql/0072 (adjustment keys hashed)' FROM hashed;
ALTER TABLE operator_actions ENABLE TRIGGER operator_actions_no_change;
