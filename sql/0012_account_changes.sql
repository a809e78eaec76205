-- Every commit that changes what an account's status says NOTIFYs `storekeeper_account_changed` with the account id,
-- so `serve` drops that account from its status cache. NOTIFYs are delivered at commit, once per account and
-- transaction; a statement-level trigger reads the changed rows once.
CREATE FUNCTION storekeeper_notify_subscription_accounts() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP IN ('UPDATE', 'DELETE') THEN
        PERFORM pg_notify('storekeeper_account_changed', account_id) FROM (SELECT DISTINCT account_id FROM old_rows WHERE account_id IS NOT NULL) AS changed;
    END IF;
    IF TG_OP IN ('INSERT', 'UPDATE') THEN
        PERFORM pg_notify('storekeeper_account_changed', account_id) FROM (SELECT DISTINCT account_id FROM new_rows WHERE account_id IS NOT NULL) AS changed;
    END IF;
    RETURN NULL;
END $$;

CREATE TRIGGER subscriptions_inserted AFTER INSERT ON subscriptions REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION storekeeper_notify_subscription_accounts();
CREATE TRIGGER subscriptions_updated AFTER UPDATE ON subscriptions REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION storekeeper_notify_subscription_accounts();
CREATE TRIGGER subscriptions_deleted AFTER DELETE ON subscriptions REFERENCING OLD TABLE AS old_rows
    FOR EACH STATEMENT EXECUTE FUNCTION storekeeper_notify_subscription_accounts();

-- A ledger row or a moved window changes the balances of the bucket's account: its own, or its subscription's owner.
CREATE FUNCTION storekeeper_notify_bucket_accounts() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('storekeeper_account_changed', account_id) FROM (
        SELECT DISTINCT coalesce(b.account_id, s.account_id) AS account_id
        FROM changed_buckets c
        JOIN credit_buckets b ON b.key = c.key
        LEFT JOIN subscriptions s ON s.original_transaction_id = b.original_transaction_id
    ) AS accounts WHERE account_id IS NOT NULL;
    RETURN NULL;
END $$;

CREATE FUNCTION storekeeper_notify_ledger_accounts() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('storekeeper_account_changed', account_id) FROM (
        SELECT DISTINCT coalesce(b.account_id, s.account_id) AS account_id
        FROM (SELECT DISTINCT bucket FROM new_entries) AS c
        JOIN credit_buckets b ON b.key = c.bucket
        LEFT JOIN subscriptions s ON s.original_transaction_id = b.original_transaction_id
    ) AS accounts WHERE account_id IS NOT NULL;
    RETURN NULL;
END $$;

CREATE TRIGGER credit_ledger_inserted AFTER INSERT ON credit_ledger REFERENCING NEW TABLE AS new_entries
    FOR EACH STATEMENT EXECUTE FUNCTION storekeeper_notify_ledger_accounts();
CREATE TRIGGER credit_buckets_updated AFTER UPDATE ON credit_buckets REFERENCING NEW TABLE AS changed_buckets
    FOR EACH STATEMENT EXECUTE FUNCTION storekeeper_notify_bucket_accounts();
