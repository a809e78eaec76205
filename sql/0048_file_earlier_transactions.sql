-- The support search finds a subscription by any of its transaction ids (sql/0027), filed as each period comes in
-- force — so subscriptions last changed before 0027 could not be found by a renewal's id (issue 56). Their ids are
-- filed by the `file-transactions` job, which walks every App Store subscription a batch at a time and resumes where it
-- stopped; this enqueues its first step. A worker of the release before claims it too, fails it (no handler for the
-- kind) and it is retried with backoff: a worker of this release runs it at its next try. A mixed fleet left running
-- for about 14 hours uses up its 25 attempts; then `storekeeper jobs requeue --state failed --kind file-transactions`.
INSERT INTO jobs (kind, args, unique_key, priority)
SELECT 'file-transactions', '{"after": ""}'::jsonb, 'file-transactions:', 10
WHERE EXISTS (SELECT 1 FROM subscriptions)
ON CONFLICT DO NOTHING;
