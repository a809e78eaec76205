-- What the app's services were last told of each grant and one-time purchase: `started` or `ended`. Their events were
-- emitted afresh on every settlement and deduplicated by the event's key, and events are deleted after
-- STOREKEEPER_EVENT_RETENTION_DAYS: a lifetime purchase settled again for its next month's credits, 30 days on, found
-- its `purchase.started` gone and sent it again, every month; and a refund signed as a new version of the purchase sent
-- `purchase.started` and `purchase.ended` under the new version's keys, after the first version's. Events now follow
-- what changed since this row (SourceChanges.changes). A source settled before this file has no row until its next
-- settlement, which then emits as before (by the keys still kept). No personal data: ids of transactions and grants.
CREATE TABLE source_announcements (
    source_id     text PRIMARY KEY,
    announced     text NOT NULL CHECK (announced IN ('started', 'ended')),
    announced_at  timestamptz NOT NULL
);
