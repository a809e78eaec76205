-- Usage answers kept for a window (issue 56 part 2), then deleted, so that a spend probes the recent answers, not all
-- of them; a key is free to be used again after its answer goes.
--
-- A spend's debits are ledger rows keyed by its idempotency key (`spend:<bytes>:<account>:<key>:<n>`), and the ledger
-- keeps them for good: a key used again after its answer went would repeat them, and `ON CONFLICT DO NOTHING` would
-- drop the new debits — served, uncharged. So such a spend's debits carry the microsecond it was answered at
-- (`…:<key>@<µs>:<n>`), which its answer keeps here for its reversal. NULL: the plain keys — every first spend under a
-- key, as every release before wrote them (so a process of the release before, during an upgrade, finds them too).
-- Adding a nullable column without a default rewrites nothing: the lock it takes is brief.
ALTER TABLE usage_requests ADD COLUMN debits_at_micros bigint;

-- The last spend (or hold) of each account among the answers and holds the window deleted: Apple's retention rules ask
-- for days since an account's last spend (docs/retention.md), which must not read "never" once its answers are gone.
CREATE TABLE account_last_spends (
    account_id text PRIMARY KEY,
    spent_at   timestamptz NOT NULL
);
