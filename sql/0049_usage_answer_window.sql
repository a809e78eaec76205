-- Usage answers kept for a window (issue 56 part 2), then deleted, so that a spend probes the recent answers, not all
-- of them; a key is free to be used again after its answer goes.
--
-- A spend's debits are ledger rows keyed by its idempotency key, and the ledger keeps them for good: a key used again
-- after its answer went would repeat the old debits' keys, and `ON CONFLICT DO NOTHING` would drop the new debits —
-- served, uncharged. So the keys of a spend's debits now also carry the microsecond of the spend
-- (`spend:<bytes>:<account>:<key>@<µs>:<n>`), stored with its answer for its reversal to find them. NULL: a spend
-- before this file (or by a process of the release before, during an upgrade), keyed without it. Adding a nullable
-- column without a default rewrites nothing: the lock it takes is brief.
ALTER TABLE usage_requests ADD COLUMN debits_at_micros bigint;

-- The last spend (or hold) of each account among the answers and holds the window deleted: Apple's retention rules ask
-- for days since an account's last spend (docs/retention.md), which must not read "never" once its answers are gone.
CREATE TABLE account_last_spends (
    account_id text PRIMARY KEY,
    spent_at   timestamptz NOT NULL
);
