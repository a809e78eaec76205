-- Accounts' claims of Play purchases (issue 52): `POST /v1/accounts/{id}/google/purchases` links a purchase token to
-- the account that posts it — a purchase made before Storekeeper, or without `obfuscatedExternalAccountId`. The
-- newest claim of any token of a chain names the subscription's account (GooglePlaySubscriptions); under the
-- transfer policy `keep` a claim of a chain another account holds is refused before it is stored.
CREATE TABLE google_purchase_claims (
    purchase_token text PRIMARY KEY,
    account_id     text NOT NULL,
    claimed_at     timestamptz NOT NULL
);
CREATE INDEX google_purchase_claims_account ON google_purchase_claims (account_id);

-- Support search finds a Play subscription by any of its chain's purchase tokens (AccountSearch).
CREATE INDEX google_subscriptions_tokens ON google_subscriptions USING gin (tokens);
