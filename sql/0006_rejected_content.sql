-- Authentic notifications whose content is outside Storekeeper's limits (a date in the year 292 million, a NUL
-- byte, a 100 KB product id) are stored — nothing authentic is lost — and applied as `rejected_content`, changing
-- nothing. The reason is kept beside the outcome for `accounts show` and the dashboard.
-- notifications.apply_outcome is now: applied | duplicate | out_of_order | recorded | topped_up | rejected_content
ALTER TABLE notifications ADD COLUMN rejected_reason text;
-- `accounts show` and the dashboard find an account's rejected notifications by the appAccountToken they carry:
-- such a notification created no subscription to find it through. Rejected rows are few, so the index is small.
CREATE INDEX notifications_rejected_account ON notifications ((decoded->'transaction'->>'appAccountToken'))
    WHERE rejected_reason IS NOT NULL;
