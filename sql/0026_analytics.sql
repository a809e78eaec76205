-- Analytics rollups (issue 43): what each subscription adds to the daily figures, kept up to date by the workers in the
-- transaction that derives the subscription, so charts read sums per day instead of the facts.
--
-- analytics_contributions: the last contribution of each subscription, as [day, measure, store, environment,
-- product, currency, value] rows; a new derivation adds only its difference from this one.
CREATE TABLE analytics_contributions (
    subscription_id text PRIMARY KEY,
    entries         jsonb NOT NULL
);

-- analytics_deltas: the differences, appended (inserts take no row lock, so concurrent applies never wait for each
-- other here); `analytics-compact` folds them into analytics_daily every minute. Readers sum both.
CREATE TABLE analytics_deltas (
    id          bigserial PRIMARY KEY,
    day         integer NOT NULL,             -- UTC days since 1970-01-01
    measure     text NOT NULL,
    store       text NOT NULL,
    environment text NOT NULL,
    product     text NOT NULL,                -- the product; a tier for credits
    currency    text NOT NULL,                -- ISO 4217 for money; the meter for credits; '' for counts
    value       bigint NOT NULL
);

CREATE TABLE analytics_daily (
    environment text NOT NULL,
    measure     text NOT NULL,
    day         integer NOT NULL,
    store       text NOT NULL,
    product     text NOT NULL,
    currency    text NOT NULL,
    value       bigint NOT NULL,
    PRIMARY KEY (environment, measure, day, store, product, currency)
);

-- How far credit_ledger has been rolled up into credits_spent and credits_granted (its id; every row at or below it is
-- counted once).
CREATE TABLE analytics_progress (
    name     text PRIMARY KEY,
    position bigint NOT NULL
);
