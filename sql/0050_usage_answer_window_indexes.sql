-- storekeeper: outside a transaction
-- What the idempotency window's hourly job deletes, oldest first (issue 56 part 2): a B-tree on the time, so each batch
-- reads the rows it deletes and no others. (A BRIN index would cost less to keep up, but deleted rows' space is used
-- again by new answers and a BRIN range's bounds never narrow: after the first weeks every range would match, and each
-- run would read the whole table.) A new answer's time is the newest, so its entry goes to the index's last page, which
-- stays in memory. Built concurrently: spends and holds go on meanwhile.
CREATE INDEX CONCURRENTLY IF NOT EXISTS usage_requests_created ON usage_requests (created_at);
CREATE INDEX CONCURRENTLY IF NOT EXISTS credit_holds_ended_created ON credit_holds (created_at) WHERE state <> 'held';
