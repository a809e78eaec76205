-- storekeeper: outside a transaction
-- What the window's hourly job deletes is found by time (issue 56 part 2). Rows come in time order and are seldom
-- updated, so a BRIN index (a few pages, next to nothing to keep up on a spend's insert) finds the old block ranges
-- without a scan of the table or a B-tree every spend would write to. Built concurrently: spends go on meanwhile.
CREATE INDEX CONCURRENTLY IF NOT EXISTS usage_requests_created_brin ON usage_requests USING brin (created_at);
CREATE INDEX CONCURRENTLY IF NOT EXISTS credit_holds_created_brin ON credit_holds USING brin (created_at);
