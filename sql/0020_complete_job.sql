-- Completing a job (PostgresJobQueue.complete): moves it to job_history if it is still running under the claimed
-- attempt, and says whether it did. A function so that a use case can complete its job in the statement that records
-- its own last write (an applied notification's outcome, NotificationStore.markProcessed) — one round trip instead of
-- two — while the completion's SQL stays in one place.
CREATE FUNCTION complete_job(job_id bigint, job_attempt bigint)
RETURNS boolean
LANGUAGE plpgsql VOLATILE
SET plan_cache_mode = force_generic_plan
AS $$
BEGIN
    WITH finished AS (
        DELETE FROM jobs WHERE id = job_id AND attempt = job_attempt AND state = 'running'
        RETURNING id, kind, attempt, args, errors, unique_key, created_at
    )
    INSERT INTO job_history (id, kind, state, attempt, args, errors, unique_key, created_at)
    SELECT id, kind, 'completed', attempt, args, errors, unique_key, created_at FROM finished;
    RETURN FOUND;
END
$$;
