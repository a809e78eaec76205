-- A subscription names its store (issue 52): until now the store was guessed from the id's shape (Stripe's `sub_…`
-- against the App Store's digits), in Swift and in SQL, which a Play purchase token cannot follow.
--
-- Short lock: a column with a constant default is added without rewriting the table (PostgreSQL 11+); only Stripe's
-- rows are then updated, and the check is added NOT VALID (new rows are checked; the rows it would scan hold the
-- default or the update's value). The migration is one transaction, so the table's exclusive lock lasts through the
-- update's one scan of the table: `docs/operations.md` gives the time measured on a million subscriptions.
--
-- The primary key stays on the id alone: it is stricter than the pair (the stores' ids cannot collide by shape —
-- Apple's digits, Stripe's `sub_…`, Play's tokens), and moving it to the pair needs an index built concurrently,
-- outside a transaction, which the migrator does not do yet. This version names the store on every write.
ALTER TABLE subscriptions ADD COLUMN store text NOT NULL DEFAULT 'app_store';
UPDATE subscriptions SET store = 'stripe' WHERE original_transaction_id LIKE 'sub\_%';
ALTER TABLE subscriptions ALTER COLUMN store DROP DEFAULT;
ALTER TABLE subscriptions ADD CONSTRAINT subscriptions_store_check CHECK (store IN ('app_store', 'stripe', 'google_play')) NOT VALID;

-- During a rolling upgrade, processes of the previous version still insert subscriptions without naming the store:
-- their rows are filed as the id's shape said before. This version always names it (the trigger's condition is
-- false and its function is not called).
CREATE FUNCTION subscriptions_store_of_legacy_writer() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    NEW.store := CASE WHEN NEW.original_transaction_id LIKE 'sub\_%' THEN 'stripe' ELSE 'app_store' END;
    RETURN NEW;
END
$$;
CREATE TRIGGER subscriptions_store_of_legacy_writer BEFORE INSERT ON subscriptions
    FOR EACH ROW WHEN (NEW.store IS NULL) EXECUTE FUNCTION subscriptions_store_of_legacy_writer();
