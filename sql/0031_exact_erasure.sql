-- Erasure matches ids exactly (issue 51, third review). The erasure of 0029/0030 matched the id as a substring of
-- whole texts, so erasing `x` rewrote rows of `x2`, and `storekeeper.erasing` was a plain setting with which any
-- session of the app's role could rewrite the audit log. Now an erasure finds an account's rows by their account
-- columns, the parsed parts of keys, and JSON values equal to the id (ErasedAccounts), and the audit log accepts one
-- change only: the erasure's own, of the entries of the account being erased.

-- A document with every string value equal to `old` (not containing it) replaced by `new`, at any depth.
CREATE FUNCTION jsonb_replace_string(document jsonb, old text, new text) RETURNS jsonb LANGUAGE plpgsql IMMUTABLE AS $$
BEGIN
    CASE jsonb_typeof(document)
    WHEN 'string' THEN
        RETURN CASE WHEN document #>> '{}' = old THEN to_jsonb(new) ELSE document END;
    WHEN 'object' THEN
        RETURN coalesce((SELECT jsonb_object_agg(e.key, jsonb_replace_string(e.value, old, new)) FROM jsonb_each(document) AS e), '{}'::jsonb);
    WHEN 'array' THEN
        RETURN coalesce((SELECT jsonb_agg(jsonb_replace_string(a.value, old, new) ORDER BY a.ordinality)
                         FROM jsonb_array_elements(document) WITH ORDINALITY AS a), '[]'::jsonb);
    ELSE
        RETURN document;
    END CASE;
END
$$;

-- What an erasure makes of an audit entry's before/after: the account's id where a value is exactly it, and the
-- operator's words about the customer (a top-level `reason`) gone. Who, what and when are columns and never change.
CREATE FUNCTION erased_operator_action_document(document jsonb, account text, pseudonym text) RETURNS jsonb LANGUAGE sql IMMUTABLE AS $$
    SELECT CASE WHEN d ? 'reason' THEN jsonb_set(d, '{reason}', '"(erased)"') ELSE d END
    FROM (SELECT jsonb_replace_string(document, account, pseudonym) AS d) AS replaced
$$;

-- Every erasure, first or again, as a row no one can take back: the mark that lets the audit log be rewritten, so a
-- rewrite always leaves one (and the tombstones, likewise, are never changed or removed).
CREATE TABLE erasures (
    id          bigserial PRIMARY KEY,
    pseudonym   text NOT NULL,
    erased_at   timestamptz NOT NULL,
    erased_by   text NOT NULL,
    transaction xid8 NOT NULL DEFAULT pg_current_xact_id()
);
CREATE INDEX erasures_pseudonym ON erasures (pseudonym);

CREATE FUNCTION append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION '% is append-only: % refused', TG_TABLE_NAME, TG_OP USING ERRCODE = 'insufficient_privilege';
END
$$;
CREATE TRIGGER erasures_append_only BEFORE UPDATE OR DELETE ON erasures FOR EACH ROW EXECUTE FUNCTION append_only();
CREATE TRIGGER erasures_no_truncate BEFORE TRUNCATE ON erasures FOR EACH STATEMENT EXECUTE FUNCTION append_only();
CREATE TRIGGER erased_accounts_append_only BEFORE UPDATE OR DELETE ON erased_accounts FOR EACH ROW EXECUTE FUNCTION append_only();
CREATE TRIGGER erased_accounts_no_truncate BEFORE TRUNCATE ON erased_accounts FOR EACH STATEMENT EXECUTE FUNCTION append_only();

-- Whether the current transaction has filed an erasure under `pseudonym`: the mark of an erasure under way.
CREATE FUNCTION erasure_in_this_transaction(pseudonym text) RETURNS boolean LANGUAGE sql STABLE AS $$
    SELECT EXISTS (
        SELECT 1 FROM erasures e WHERE e.pseudonym = erasure_in_this_transaction.pseudonym AND e.transaction = pg_current_xact_id())
$$;

-- The audit log accepts one UPDATE: an entry of the account named in `storekeeper.erasure` (`<account> US <pseudonym>`,
-- set by erase_operator_actions), changed exactly as erased_operator_action_document says, in a transaction that has
-- filed an erasure under that pseudonym. Anything else — the old setting, another account's entry, any other
-- field or value — is refused. DELETE and TRUNCATE are refused as before.
CREATE OR REPLACE FUNCTION operator_actions_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'UPDATE' AND OLD.account_id IS NOT NULL
        AND current_setting('storekeeper.erasure', true) = OLD.account_id || chr(31) || NEW.account_id
        AND erasure_in_this_transaction(NEW.account_id)
        AND NEW.id = OLD.id AND NEW.at = OLD.at AND NEW.operator = OLD.operator AND NEW.role = OLD.role
        AND NEW.action = OLD.action AND NEW.request = OLD.request AND NEW.status = OLD.status
        AND NEW.target IS NOT DISTINCT FROM (CASE WHEN OLD.target = OLD.account_id THEN NEW.account_id ELSE OLD.target END)
        AND NEW.before IS NOT DISTINCT FROM erased_operator_action_document(OLD.before, OLD.account_id, NEW.account_id)
        AND NEW.after IS NOT DISTINCT FROM erased_operator_action_document(OLD.after, OLD.account_id, NEW.account_id)
    THEN
        RETURN NEW;
    END IF;
    RAISE EXCEPTION 'operator_actions is append-only: % refused', TG_OP USING ERRCODE = 'insufficient_privilege';
END
$$;

-- The erasure's rewrite of the audit log: the entries whose account column is exactly `account`, nothing else, and only
-- inside a transaction that filed an erasure under `pseudonym`. Answers how many entries it rewrote. It runs as its
-- owner (the role that ran the migrations), so an app role granted only SELECT and INSERT on the log can still erase.
CREATE FUNCTION erase_operator_actions(account text, pseudonym text) RETURNS bigint LANGUAGE plpgsql SECURITY DEFINER
SET search_path FROM CURRENT AS $$
DECLARE
    changed bigint;
BEGIN
    IF NOT erasure_in_this_transaction(pseudonym) THEN
        RAISE EXCEPTION 'erase_operator_actions: no erasure of this transaction filed that pseudonym' USING ERRCODE = 'insufficient_privilege';
    END IF;
    PERFORM set_config('storekeeper.erasure', account || chr(31) || pseudonym, true);
    UPDATE operator_actions a SET account_id = pseudonym,
        target = CASE WHEN a.target = account THEN pseudonym ELSE a.target END,
        before = erased_operator_action_document(a.before, account, pseudonym),
        after = erased_operator_action_document(a.after, account, pseudonym)
    WHERE a.account_id = account;
    GET DIAGNOSTICS changed = ROW_COUNT;
    PERFORM set_config('storekeeper.erasure', '', true);
    RETURN changed;
END
$$;

-- Credit adjustments' operation keys were global (`adjust:<key>`): the same key sent for a second account posted
-- nothing and answered that it had. They now name their account as spends' do (`adjust:<bytes>:<account>:<key>`);
-- the keys posted before take that form from the top-up bucket they posted to (found through the audit log's entries
-- of adjustments, which name every key, so the ledger is read by its unique index, not scanned).
UPDATE credit_ledger l SET operation_key = 'adjust:' || octet_length(b.account_id) || ':' || b.account_id || ':' || substr(l.operation_key, 8)
FROM credit_buckets b
WHERE l.operation_key IN (SELECT 'adjust:' || a.target FROM operator_actions a WHERE a.action = 'credits.adjust' AND a.target IS NOT NULL)
    AND b.key = l.bucket AND b.account_id IS NOT NULL;
