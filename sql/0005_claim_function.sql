-- The claim (PostgresJobQueue.ClaimJobs) as a function, so that it carries planner settings of its own. `jobs`
-- churns: its statistics are taken while few jobs wait and are stale when thousands do, and on them the planner
-- chose plans that read every waiting job — a bitmap scan and a sort of all candidates, or a sequential scan to
-- write the picked rows back. With 10,000–20,000 jobs pending that cost 0.9 ms a claim instead of 0.2 ms and
-- slowed applying by a fifth (docs/queue.md). Without bitmap and sequential scans the plans left walk `jobs_claim`
-- in claim order, stop at the limit and write back through the primary key, whatever the statistics say.
CREATE FUNCTION claim_jobs(claim_limit bigint, claimer uuid)
RETURNS TABLE (job_id bigint, job_kind text, job_attempt integer, job_max_attempts integer, job_arguments text)
LANGUAGE plpgsql VOLATILE
SET enable_bitmapscan = off
SET enable_seqscan = off
AS $$
BEGIN
    RETURN QUERY
    WITH picked AS MATERIALIZED (
        SELECT id FROM jobs AS candidate
        WHERE state = 'available' AND run_at <= now()
          AND (concurrency_key IS NULL OR NOT EXISTS (
              SELECT 1 FROM jobs AS blocker
              WHERE blocker.concurrency_key = candidate.concurrency_key
                AND blocker.state IN ('available', 'running')
                AND (blocker.state = 'running' OR (blocker.id < candidate.id AND blocker.run_at <= now()))))
        ORDER BY priority, run_at, id
        LIMIT claim_limit
        FOR UPDATE SKIP LOCKED
    )
    UPDATE jobs SET state = 'running', attempt = jobs.attempt + 1, attempted_at = now(), locked_by = claimer
    FROM picked WHERE jobs.id = picked.id
    RETURNING jobs.id, jobs.kind, jobs.attempt, jobs.max_attempts, jobs.args::text;
END
$$;
