-- Apple's 2025–26 fields (issue 54). Every column is nullable without a default, so adding them rewrites nothing;
-- but the index below is built in the migration's transaction, after the ALTER's exclusive lock: reads and writes of
-- `subscriptions` wait while it scans the table (docs/operations.md, "Upgrading to 0044").
--
-- A monthly-billed 12-month commitment (`billingPlanType` MONTHLY): the paid month, the commitment's end and what
-- follows it. Win-back offers Apple says the customer may redeem. The customer's `appTransactionId`, which links a
-- rescinded consent to the account. A row written before this says none of them until its subscription is derived
-- again — by its next notification, or for all at once by `storekeeper replay --all --write` after the upgrade.
ALTER TABLE subscriptions
    ADD COLUMN billing_plan           text,          -- NULL: billed_upfront
    ADD COLUMN commitment_period      integer,
    ADD COLUMN commitment_periods     integer,
    ADD COLUMN commitment_ends_at     timestamptz,
    ADD COLUMN commitment_renews_to   text,
    ADD COLUMN commitment_price_after bigint,
    ADD COLUMN win_back_offer_ids     text[],
    ADD COLUMN app_transaction_id     text;
CREATE INDEX subscriptions_app_transaction ON subscriptions (app_transaction_id) WHERE app_transaction_id IS NOT NULL;

-- `RESCIND_CONSENT`: the customer withdrew consent for the app (Notifications 2.19). One row per notification;
-- `account_id` is filled when a subscription of that app transaction names its account — at apply time, or later
-- when one arrives (its apply, or the `consent-link` sweep), and `account.consent_rescinded` is sent then.
CREATE TABLE consent_rescissions (
    notification_uuid  text PRIMARY KEY,
    app_transaction_id text NOT NULL,
    environment        text NOT NULL,
    rescinded_at       timestamptz NOT NULL,       -- the notification's signedDate
    account_id         text,
    linked_at          timestamptz
);
CREATE INDEX consent_rescissions_unlinked ON consent_rescissions (app_transaction_id) WHERE account_id IS NULL;
CREATE INDEX consent_rescissions_account ON consent_rescissions (account_id) WHERE account_id IS NOT NULL;

-- Rescissions the release before stored and finished without this table: applied again (the apply is idempotent).
INSERT INTO jobs (kind, args, unique_key)
SELECT 'apply-notification', jsonb_build_object('notificationUUID', upper(notification_uuid::text)),
       'apply:' || upper(notification_uuid::text)
FROM notifications WHERE notification_type = 'RESCIND_CONSENT'
ON CONFLICT DO NOTHING;
