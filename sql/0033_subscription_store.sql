-- A subscription names its store (issue 52): until now the store was guessed from the id's shape (Stripe's `sub_…`
-- against the App Store's digits), in Swift and in SQL, which a Play purchase token cannot follow.
--
-- Online: the column is added empty (a catalogue change, no rewrite, no scan), and the check NOT VALID (new rows are
-- checked, nothing is scanned). Rows written before this migration are filled in after it, in batches of their own
-- short transactions (SchemaMigrator's backfill, run by `storekeeper migrate` until `storekeeper_backfills` records
-- it done); until then a row without a store is read by the rule it was written under (subscription_store_before_0033,
-- the one place that rule is left). Filling them in here, in the migration's one transaction, held the table's
-- exclusive lock for 2.7 s per 100,000 Stripe subscriptions (docs/operations.md).
--
-- The primary key stays on the id alone: it is stricter than the pair (the stores' ids cannot collide by shape —
-- Apple's digits, Stripe's `sub_…`, Play's tokens), and moving it to the pair needs an index built concurrently,
-- outside a transaction, which the migrator does not do yet. This version names the store on every write.
ALTER TABLE subscriptions ADD COLUMN store text;
ALTER TABLE subscriptions ADD CONSTRAINT subscriptions_store_check CHECK (store IN ('app_store', 'stripe', 'google_play')) NOT VALID;

-- The store of a row written before this migration: what the id's shape said then.
CREATE FUNCTION subscription_store_before_0033(id text) RETURNS text LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT CASE WHEN id LIKE 'sub\_%' THEN 'stripe' ELSE 'app_store' END
$$;

-- During a rolling upgrade, processes of the previous version still insert subscriptions without naming the store:
-- their rows are filed by the rule they were written under. This version always names it (the trigger's condition is
-- false and its function is not called).
CREATE FUNCTION subscriptions_store_of_legacy_writer() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    NEW.store := subscription_store_before_0033(NEW.original_transaction_id);
    RETURN NEW;
END
$$;
CREATE TRIGGER subscriptions_store_of_legacy_writer BEFORE INSERT ON subscriptions
    FOR EACH ROW WHEN (NEW.store IS NULL) EXECUTE FUNCTION subscriptions_store_of_legacy_writer();

-- Data changes made after a migration, in batches (the migration only adds what they fill); a row once done.
CREATE TABLE storekeeper_backfills (
    name    text PRIMARY KEY,
    done_at timestamptz NOT NULL
);
