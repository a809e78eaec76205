-- Erasure and the audit log (issue 43, second review): an erased account's id, and what operators wrote about the
-- customer, must not outlive the erasure in the audit log either — kept there, the entries would tie the id to the
-- pseudonym and undo it. The erasure's transaction (SET LOCAL storekeeper.erasing = 'on') may rewrite an entry's
-- account, target and before/after; who did what, when, by which route and with what answer never changes, and every
-- other UPDATE, DELETE or TRUNCATE is refused as before.
CREATE OR REPLACE FUNCTION operator_actions_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'UPDATE' AND current_setting('storekeeper.erasing', true) = 'on'
        AND NEW.id = OLD.id AND NEW.at = OLD.at AND NEW.operator = OLD.operator AND NEW.role = OLD.role
        AND NEW.action = OLD.action AND NEW.request = OLD.request AND NEW.status = OLD.status
    THEN
        RETURN NEW;
    END IF;
    RAISE EXCEPTION 'operator_actions is append-only: % refused', TG_OP USING ERRCODE = 'insufficient_privilege';
END
$$;
