-- An erasure rewrote every JSON value equal to the account's id in its audit entries' before/after (sql/0031), so an
-- account named as a tier or a meter (`pro`, `max`, `ai_requests`) had its `grant.create` entry's `tier` or its
-- `credits.adjust` entry's `meter` made the pseudonym: the log no longer said what the operator did, which the erasure
-- promises to keep (helper-142). As for Stripe's objects (sql/0073), an id is replaced where it names the account —
-- a member `accountId`, or one whose name ends in `AccountId` (`fromAccountId`, `toAccountId`), at any depth — and
-- nowhere else; an operator's top-level `reason` still becomes `(erased)`. The documents the admin routes note are
-- those of `GrantResponse`, `CreditAdjustmentsController.Answer` and `RenewalExtensionDocument`: each names its account
-- as `accountId`.
--
-- Online: functions replaced, no table change. Entries of accounts erased before keep what the earlier rule wrote (the
-- id is not known any more to tell a tier that was the id from the id).

-- `document` with every string value equal to `account` replaced by `pseudonym` where its member's name names an
-- account (`named` is whether the value's own member did), at any depth: an array's elements inherit their member's.
CREATE FUNCTION jsonb_account_members_replaced(document jsonb, account text, pseudonym text, named boolean DEFAULT false)
RETURNS jsonb LANGUAGE plpgsql IMMUTABLE AS $$
BEGIN
    CASE jsonb_typeof(document)
    WHEN 'string' THEN
        RETURN CASE WHEN named AND document #>> '{}' = account THEN to_jsonb(pseudonym) ELSE document END;
    WHEN 'object' THEN
        RETURN coalesce((SELECT jsonb_object_agg(e.key, jsonb_account_members_replaced(
                             e.value, account, pseudonym, e.key = 'accountId' OR e.key LIKE '%AccountId'))
                         FROM jsonb_each(document) AS e), '{}'::jsonb);
    WHEN 'array' THEN
        RETURN coalesce((SELECT jsonb_agg(jsonb_account_members_replaced(a.value, account, pseudonym, named) ORDER BY a.ordinality)
                         FROM jsonb_array_elements(document) WITH ORDINALITY AS a), '[]'::jsonb);
    ELSE
        RETURN document;
    END CASE;
END
$$;

-- What an erasure makes of an audit entry's before/after, for erase_operator_actions and the log's trigger alike (both
-- call this function, so the rewrite and what the trigger accepts cannot drift apart).
CREATE OR REPLACE FUNCTION erased_operator_action_document(document jsonb, account text, pseudonym text) RETURNS jsonb LANGUAGE sql IMMUTABLE AS $$
    SELECT CASE WHEN d ? 'reason' THEN jsonb_set(d, '{reason}', '"(erased)"') ELSE d END
    FROM (SELECT jsonb_account_members_replaced(document, account, pseudonym) AS d) AS replaced
$$;
