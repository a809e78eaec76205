-- Promotional-offer signatures handed to apps: an offer given once per account is signed for it once.
CREATE TABLE offer_signatures (
    id          bigserial PRIMARY KEY,
    account_id  text NOT NULL,
    offer_id    text NOT NULL,
    product_id  text NOT NULL,
    nonce       uuid NOT NULL UNIQUE,
    signed_at   timestamptz NOT NULL
);
CREATE INDEX offer_signatures_account ON offer_signatures (account_id, offer_id);
