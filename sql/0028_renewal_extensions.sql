-- Renewal-date extensions asked of Apple (issue 43): one subscription's (support) or every active subscriber's of a
-- product (admin). Each is kept by the request identifier Apple was given, with Apple's answer — a single extension's
-- success and new expiry, a mass extension's progress as its status endpoint and its RENEWAL_EXTENSION/SUMMARY
-- notification report it. Apple's RENEWAL_EXTENDED notifications are facts like any other and move the expiry.
CREATE TABLE renewal_extensions (
    request_identifier      text PRIMARY KEY,
    kind                    text NOT NULL CHECK (kind IN ('single', 'mass')),
    environment             text NOT NULL,
    original_transaction_id text,               -- single
    account_id              text,               -- single: the account the subscription belonged to when asked
    product_id              text,               -- mass
    storefronts             text[],             -- mass: the storefronts it was limited to; NULL for all
    days                    integer NOT NULL CHECK (days BETWEEN 1 AND 90),
    reason_code             smallint NOT NULL,
    requested_by            text NOT NULL,      -- the operator's name
    requested_at            timestamptz NOT NULL,
    answered_at             timestamptz,
    succeeded               boolean,            -- single: Apple's `success`
    effective_date          timestamptz,        -- single: the new expiry
    error                   text,               -- why Apple refused, or could not be asked
    complete                boolean NOT NULL DEFAULT false,
    complete_date           timestamptz,
    succeeded_count         bigint,
    failed_count            bigint,
    CHECK ((kind = 'single') = (original_transaction_id IS NOT NULL)),
    CHECK ((kind = 'mass') = (product_id IS NOT NULL))
);
CREATE INDEX renewal_extensions_account ON renewal_extensions (account_id, requested_at) WHERE account_id IS NOT NULL;
CREATE INDEX renewal_extensions_mass ON renewal_extensions (requested_at) WHERE kind = 'mass';
