-- storekeeper: outside a transaction
-- The accounts that owned a subscription before, looked up when a claw-back (a prorated refund) is derived again after
-- the subscription changed hands: what it took from their top-ups counts as taken (CreditLedger.noteTakenElsewhere).
-- Transfers are few, but a scan of all of them for each such derivation would grow with the install. Built
-- concurrently: the table is written by applies meanwhile.
CREATE INDEX CONCURRENTLY IF NOT EXISTS account_transfers_subscription ON account_transfers (original_transaction_id);
