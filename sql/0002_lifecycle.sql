-- Storekeeper schema, version 2: complete lifecycle state, client claims, transfers and the archive of ended
-- subscriptions.

-- Event order is (signed_date, event id): the id breaks ties between events Apple signed in the same millisecond.
ALTER TABLE subscriptions
    ADD COLUMN last_event_id       text NOT NULL DEFAULT '',
    ADD COLUMN revoked_at          timestamptz,
    ADD COLUMN offer_type          integer,                -- 1 introductory, 2 promotional, 3 offer code, 4 win-back
    ADD COLUMN offer_identifier    text,
    ADD COLUMN offer_discount_type text,
    ADD COLUMN offer_period        text,
    ADD COLUMN price_increase      text CHECK (price_increase IN ('pending', 'accepted')),
    ADD COLUMN price               bigint;                 -- milliunits paid for the current period, when known

-- notifications.apply_outcome is now: applied | duplicate | out_of_order | recorded
-- The raw JWS is base64 and barely compresses: store it out of line without trying (pglz on every intake was the
-- largest single cost of PostgreSQL under load). The decoded JSON compresses with lz4 where the server has it.
ALTER TABLE notifications ALTER COLUMN signed_payload SET STORAGE EXTERNAL;
DO $$
BEGIN
    IF EXISTS (SELECT 1 FROM pg_settings WHERE name = 'default_toast_compression' AND 'lz4' = ANY (enumvals)) THEN
        ALTER TABLE notifications ALTER COLUMN decoded SET COMPRESSION lz4;
    END IF;
END $$;

-- Events of a subscription that are not notifications, verified: signed transactions apps posted for an account
-- (POST /v1/accounts/{id}/transactions) and snapshots the App Store Server API returned (late-renewal rechecks).
-- Replay reads them beside the notifications.
CREATE TABLE subscription_events (
    event_id                text PRIMARY KEY,       -- client:<transactionId>:<signedDate>:<account> | api:<transactionId>:<signedDate>
    source                  text NOT NULL CHECK (source IN ('claim', 'server_api')),
    original_transaction_id text NOT NULL,
    transaction_id          text NOT NULL,
    account_id              uuid,                   -- the claiming account (claims only)
    signed_date             bigint NOT NULL,
    signed_data             text NOT NULL,          -- the JWS as received (transaction, then renewal info on a new line)
    decoded                 jsonb NOT NULL,         -- the verified event
    received_at             timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX subscription_events_subscription ON subscription_events (original_transaction_id, signed_date);

-- Every move of a subscription from one account to another (STOREKEEPER_TRANSFER_POLICY=transfer).
CREATE TABLE account_transfers (
    id                      bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    original_transaction_id text NOT NULL,
    from_account            uuid NOT NULL,
    to_account              uuid NOT NULL,
    transferred_at          timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX account_transfers_from ON account_transfers (from_account);
CREATE INDEX account_transfers_to ON account_transfers (to_account);

-- Ended subscriptions with the reason they ended; a reversed refund marks its row reinstated. Rebuilt for a
-- subscription whenever its state is replayed.
CREATE TABLE subscription_archive (
    original_transaction_id text NOT NULL,
    transaction_id          text NOT NULL,
    reason                  text NOT NULL CHECK (reason ~ '^(EXPIRED_[A-Z_]+|REFUND|REVOKE)$'),
    account_id              uuid,
    product_id              text NOT NULL,
    ended_at                timestamptz,
    archived_at             timestamptz NOT NULL DEFAULT now(),
    reinstated_at           timestamptz,
    PRIMARY KEY (original_transaction_id, transaction_id, reason)
);
CREATE INDEX subscription_archive_account ON subscription_archive (account_id) WHERE account_id IS NOT NULL;
