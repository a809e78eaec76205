-- storekeeper: outside a transaction
-- The accounts that owned a subscription before, looked up in every derivation of a subscription with a prorated
-- refund (a claw-back): what it took from their top-ups counts as taken, so a subscription that changed hands is not
-- clawed back again from its new owner (CreditLedger.noteTakenElsewhere). Transfers are few, but a scan of all of them
-- for each such derivation would grow with the install. Built concurrently: the table is written by applies meanwhile.
CREATE INDEX CONCURRENTLY IF NOT EXISTS account_transfers_subscription ON account_transfers (original_transaction_id);
