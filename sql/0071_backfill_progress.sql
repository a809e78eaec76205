-- Where a backfill got to. SchemaMigrator's backfills (KeyRangeBackfill) walk a table's primary key in batches of short
-- transactions, but kept their place only in memory: a `storekeeper migrate` stopped part way through a table of
-- millions of rows (an operator's Ctrl-C, a deploy that restarted the process, a lost connection) began again at the
-- first key and read every batch it had done already. Each committed batch now records its last key here, and the next
-- run walks on from it; the row goes when the backfill is recorded done in storekeeper_backfills.
--
-- A table of its own, not a nullable `done_at` there: every release reads a row of storekeeper_backfills as "done".
-- Online: a new, empty table.
CREATE TABLE storekeeper_backfill_progress (
    name       text PRIMARY KEY,
    last_key   text NOT NULL,
    updated_at timestamptz NOT NULL
);
