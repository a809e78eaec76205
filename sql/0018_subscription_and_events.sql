-- The read every apply decides on, as a function for the reason of sql/0014: as a prepared statement PostgreSQL
-- planned it at every call, and planning cost four times what it ran. (Not so the purchase-intent lookup: there a
-- function's own cost per call equals the planning it would save.)
--
-- A subscription's row (a NULL value when it has none yet) beside each of its notifications (not rejected) and its
-- other events (`source` 'n' or 'e'; none: one row with NULLs). SubscriptionHistory.subscriptionAndEvents.
CREATE FUNCTION subscription_and_events(wanted_id text)
RETURNS TABLE (subscription subscriptions, source text, decoded text, parts bytea)
LANGUAGE plpgsql STABLE
SET enable_seqscan = off
SET plan_cache_mode = force_generic_plan
AS $$
#variable_conflict use_column
BEGIN
    RETURN QUERY
    SELECT s, stored.source, stored.decoded, stored.parts
    FROM (SELECT wanted_id AS id) AS wanted
    LEFT JOIN subscriptions s ON s.original_transaction_id = wanted.id
    LEFT JOIN LATERAL (
        SELECT 'n'::text AS source, n.decoded::text AS decoded, n.signed_parts AS parts FROM notifications n
        WHERE n.original_transaction_id = wanted.id AND n.rejected_reason IS NULL
        UNION ALL
        SELECT 'e'::text, e.decoded::text, NULL::bytea FROM subscription_events e WHERE e.original_transaction_id = wanted.id
    ) AS stored ON true;
END
$$;

