-- Subscriptions are derived from every signed fact (each transaction at its newest signed version, the newest
-- renewal info, Apple's reports), and credits are keyed by billing period (`webOrderLineItemId`) and credit window.
-- Existing rows keep working: a bucket's billing period is the transaction id it was written with, which the credit
-- rules recognise; `storekeeper replay --all --write` derives every subscription again and posts the differences as
-- corrections.
ALTER TABLE subscriptions ADD COLUMN billing_period text;
UPDATE subscriptions SET billing_period = latest_transaction_id;
ALTER TABLE subscriptions ALTER COLUMN billing_period SET NOT NULL;
-- Access Apple reports beyond expires_at (a renewal not seen yet) until a recheck finds it.
ALTER TABLE subscriptions ADD COLUMN access_until timestamptz;
ALTER TABLE credit_buckets RENAME COLUMN transaction_id TO billing_period;
-- notifications.apply_outcome is now: applied | unchanged | recorded | topped_up | rejected_content (rows written
-- before keep duplicate and out_of_order).
