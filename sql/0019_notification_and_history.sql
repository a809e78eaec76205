-- An apply's first read in one round trip (NotificationStore.notificationLockingSubscription): the notification, with
-- its subscription's lock taken (the key of SubscriptionStore.lockSQL), then — when it names one and its content was
-- not refused — that subscription and its stored events (subscription_and_events), read by a later statement than
-- the one that waited for the lock: VOLATILE, so that statement sees what the lock's previous holder committed. The
-- first row is the notification's (its history columns NULL), each further row one of the history's.
CREATE FUNCTION notification_and_history(wanted uuid)
RETURNS TABLE (notification_decoded text, notification_parts bytea, notification_subscription text,
    notification_rejected text, notification_locked boolean, subscription subscriptions, source text, decoded text,
    parts bytea)
LANGUAGE plpgsql VOLATILE
SET enable_seqscan = off
SET plan_cache_mode = force_generic_plan
AS $$
BEGIN
    SELECT n.decoded::text, n.signed_parts, n.original_transaction_id, n.rejected_reason,
        pg_advisory_xact_lock(hashtextextended('subscription:' || n.original_transaction_id, 0)) IS NOT NULL
    INTO notification_decoded, notification_parts, notification_subscription, notification_rejected, notification_locked
    FROM notifications n WHERE n.notification_uuid = wanted;
    IF NOT FOUND THEN
        RETURN;
    END IF;
    RETURN NEXT;
    IF notification_locked AND notification_rejected IS NULL THEN
        RETURN QUERY
        SELECT NULL::text, NULL::bytea, NULL::text, NULL::text, NULL::boolean, h.subscription, h.source, h.decoded, h.parts
        FROM subscription_and_events(notification_subscription) AS h;
    END IF;
END
$$;
