-- Storekeeper schema, version 1: the notification inbox, subscriptions, and the job queue.
-- Applied once by `storekeeper migrate` inside one transaction.

-- Every notification ever accepted, verified, keyed by Apple's notificationUUID (identical on retries).
CREATE TABLE notifications (
    notification_uuid       uuid PRIMARY KEY,
    notification_type       text NOT NULL,
    subtype                 text,
    environment             text,
    original_transaction_id text,
    signed_date             bigint NOT NULL,              -- ms since 1970, Apple's ordering key
    signed_payload          text NOT NULL,                -- the raw JWS as received, for replay and audit
    decoded                 jsonb NOT NULL,               -- envelope + nested transaction / renewal info, verified
    received_at             timestamptz NOT NULL DEFAULT now(),
    applied_at              timestamptz,
    apply_outcome           text                          -- applied | stale | recorded
);
CREATE INDEX notifications_subscription ON notifications (original_transaction_id, signed_date)
    WHERE original_transaction_id IS NOT NULL;
CREATE INDEX notifications_received ON notifications (received_at DESC);

-- One row per auto-renewable subscription (originalTransactionId), as of the newest applied snapshot.
CREATE TABLE subscriptions (
    original_transaction_id text PRIMARY KEY,
    account_id              uuid,
    product_id              text NOT NULL,
    environment             text NOT NULL,
    status                  text NOT NULL CHECK (status IN
                                ('active', 'grace_period', 'billing_retry', 'expired', 'refunded', 'revoked')),
    will_renew              boolean NOT NULL,
    auto_renew_product_id   text,
    pending_product_id      text,
    purchase_date           timestamptz,
    expires_at              timestamptz,
    grace_period_expires_at timestamptz,
    is_trial                boolean NOT NULL,
    ownership               text NOT NULL,
    latest_transaction_id   text NOT NULL,
    last_event_type         text NOT NULL,
    last_signed_date        bigint NOT NULL,
    end_reason              text,
    created_at              timestamptz NOT NULL DEFAULT now(),
    updated_at              timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX subscriptions_account ON subscriptions (account_id) WHERE account_id IS NOT NULL;

-- The hot job table holds only jobs that can still run (available, running) or wait for an operator (failed,
-- cancelled). Finished jobs move to job_history in the statement that completes them.
CREATE TABLE jobs (
    id              bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    kind            text NOT NULL,
    state           text NOT NULL DEFAULT 'available'
                        CHECK (state IN ('available', 'running', 'failed', 'cancelled')),
    priority        smallint NOT NULL DEFAULT 0,           -- lower runs first
    run_at          timestamptz NOT NULL DEFAULT now(),
    attempt         integer NOT NULL DEFAULT 0,            -- the fencing token: bumped by every claim
    max_attempts    integer NOT NULL DEFAULT 25,
    attempt_budget  integer NOT NULL DEFAULT 25,           -- attempts granted per (re)queue; requeue raises max_attempts by it
    args            jsonb NOT NULL DEFAULT '{}',
    errors          jsonb NOT NULL DEFAULT '[]',           -- one entry per failed attempt, capped
    unique_key      text,                                  -- at most one live job per key
    concurrency_key text,                                  -- at most one running job per key, FIFO within it
    locked_by       uuid,                                  -- the worker process running it
    attempted_at    timestamptz,
    created_at      timestamptz NOT NULL DEFAULT now()
) WITH (fillfactor = 80, autovacuum_vacuum_scale_factor = 0.01, autovacuum_vacuum_threshold = 1000,
        autovacuum_analyze_scale_factor = 0.02, autovacuum_vacuum_cost_delay = 0);

-- Claim order, matching the claim predicate exactly.
CREATE INDEX jobs_claim ON jobs (priority, run_at, id) WHERE state = 'available';
-- The next delayed job, so workers can wake right when it is due.
CREATE INDEX jobs_next_run ON jobs (run_at) WHERE state = 'available';
-- Operator views of failed and cancelled jobs.
CREATE INDEX jobs_parked ON jobs (state, kind, id) WHERE state IN ('failed', 'cancelled');
CREATE INDEX jobs_running ON jobs (locked_by) WHERE state = 'running';
CREATE UNIQUE INDEX jobs_unique_key ON jobs (unique_key) WHERE unique_key IS NOT NULL;
CREATE UNIQUE INDEX jobs_one_running_per_key ON jobs (concurrency_key)
    WHERE concurrency_key IS NOT NULL AND state = 'running';
CREATE INDEX jobs_concurrency_queue ON jobs (concurrency_key, id)
    WHERE concurrency_key IS NOT NULL AND state IN ('available', 'running');

-- Finished jobs, kept for a retention period.
CREATE TABLE job_history (
    id            bigint PRIMARY KEY,
    kind          text NOT NULL,
    state         text NOT NULL CHECK (state IN ('completed', 'discarded', 'cancelled')),
    attempt       integer NOT NULL,
    args          jsonb NOT NULL,
    errors        jsonb NOT NULL,
    unique_key    text,
    created_at    timestamptz NOT NULL,
    finished_at   timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX job_history_finished ON job_history (finished_at);

-- One row per live worker process, refreshed by its heartbeat; running jobs of a stale worker are rescued.
CREATE TABLE job_workers (
    id           uuid PRIMARY KEY,
    host         text NOT NULL,
    started_at   timestamptz NOT NULL DEFAULT now(),
    heartbeat_at timestamptz NOT NULL DEFAULT now()
);

-- Maintenance leadership: one row per role, held by the worker whose lease has not expired.
CREATE UNLOGGED TABLE job_leases (
    name       text PRIMARY KEY,
    holder     uuid NOT NULL,
    expires_at timestamptz NOT NULL
);

-- Periodic schedules: the last slot enqueued, advanced by compare-and-set so exactly one worker enqueues each slot.
CREATE TABLE job_schedules (
    name      text PRIMARY KEY,
    last_slot timestamptz NOT NULL
);
