-- The support search finds a subscription by any of its transaction ids (sql/0027), filed as each period comes in
-- force — so subscriptions last changed before 0027 could not be found by a renewal's id (issue 56). Their ids are
-- filed by the `file-transactions` job, which walks every App Store subscription a batch at a time and resumes where it
-- stopped; this enqueues its first step (a worker of the release before does not know the kind and leaves it).
INSERT INTO jobs (kind, args, unique_key, priority)
SELECT 'file-transactions', '{"after": ""}'::jsonb, 'file-transactions:', 10
WHERE EXISTS (SELECT 1 FROM subscriptions)
ON CONFLICT DO NOTHING;
