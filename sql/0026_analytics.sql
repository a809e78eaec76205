-- Analytics rollups (issue 43): what each subscription adds to the daily figures, kept up to date by the workers in the
-- transaction that derives the subscription, so charts read sums per day instead of the facts.
--
-- analytics_contributions: the last contribution of each subscription, as parallel arrays (one element per entry:
-- its day, measure, store, environment, product, currency and value); a new derivation appends only its difference
-- from this one, in the same statement that replaces it.
CREATE TABLE analytics_contributions (
    subscription_id text PRIMARY KEY,
    days            integer[] NOT NULL,
    measures        text[] NOT NULL,
    stores          text[] NOT NULL,
    environments    text[] NOT NULL,
    products        text[] NOT NULL,
    currencies      text[] NOT NULL,
    amounts         bigint[] NOT NULL
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

-- Replaces a subscription's contribution and appends its difference from the stored one, in one call whose plan
-- PL/pgSQL keeps (every apply runs it): nothing is written when the two are the same.
CREATE FUNCTION analytics_record(
    subscription text, new_days integer[], new_measures text[], new_stores text[], new_environments text[], new_products text[],
    new_currencies text[], new_amounts bigint[]
) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    WITH new AS (
        SELECT * FROM unnest(new_days, new_measures, new_stores, new_environments, new_products, new_currencies, new_amounts)
            AS n(day, measure, store, environment, product, currency, value)),
    old AS (
        SELECT o.* FROM analytics_contributions c,
            unnest(c.days, c.measures, c.stores, c.environments, c.products, c.currencies, c.amounts)
                AS o(day, measure, store, environment, product, currency, value)
        WHERE c.subscription_id = subscription),
    difference AS (
        SELECT d.day, d.measure, d.store, d.environment, d.product, d.currency, sum(d.value)::bigint AS value
        FROM (SELECT * FROM new UNION ALL SELECT x.day, x.measure, x.store, x.environment, x.product, x.currency, -x.value FROM old x) AS d
        GROUP BY d.day, d.measure, d.store, d.environment, d.product, d.currency HAVING sum(d.value) <> 0),
    appended AS (
        INSERT INTO analytics_deltas (day, measure, store, environment, product, currency, value) SELECT * FROM difference)
    INSERT INTO analytics_contributions AS c (subscription_id, days, measures, stores, environments, products, currencies, amounts)
    SELECT subscription, new_days, new_measures, new_stores, new_environments, new_products, new_currencies, new_amounts
    WHERE EXISTS (SELECT FROM difference)
    ON CONFLICT (subscription_id) DO UPDATE SET days = excluded.days, measures = excluded.measures, stores = excluded.stores,
        environments = excluded.environments, products = excluded.products, currencies = excluded.currencies, amounts = excluded.amounts;
END
$$;
