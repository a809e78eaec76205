-- Account ids are the app's own ids: any non-empty string of up to 128 characters (a numeric user id, a UUID, …).
-- UUID accounts keep working: their text is the lowercased UUID, as every bucket key and lock already spells it.
ALTER TABLE subscriptions ALTER COLUMN account_id TYPE text USING account_id::text;
ALTER TABLE subscription_events ALTER COLUMN account_id TYPE text USING account_id::text;
ALTER TABLE account_transfers ALTER COLUMN from_account TYPE text USING from_account::text;
ALTER TABLE account_transfers ALTER COLUMN to_account TYPE text USING to_account::text;
ALTER TABLE subscription_archive ALTER COLUMN account_id TYPE text USING account_id::text;
ALTER TABLE credit_buckets ALTER COLUMN account_id TYPE text USING account_id::text;
ALTER TABLE usage_requests ALTER COLUMN account_id TYPE text USING account_id::text;
-- The appAccountToken an app asked for to pass to StoreKit (one per purchase, like an order number): notifications
-- carrying it resolve to the account.
CREATE TABLE purchase_intents (
    token       uuid PRIMARY KEY,
    account_id  text NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX purchase_intents_account ON purchase_intents (account_id);
-- A usage answer is stored as the domain's outcome; the HTTP status is decided at the edge.
ALTER TABLE usage_requests RENAME COLUMN http_status TO outcome;
ALTER TABLE usage_requests ALTER COLUMN outcome TYPE text
    USING CASE outcome WHEN 402 THEN 'insufficient_credits' WHEN 422 THEN 'idempotency_key_reused' ELSE 'spent' END;
