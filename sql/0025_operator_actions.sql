-- The audit log (issue 43): every change an operator key made through the admin API or the dashboard — who (the key's
-- name and role), what, when, the account and target, the state before and after. Rows are appended by the server in
-- the request that made the change; no route updates or deletes them, and these triggers refuse UPDATE, DELETE and
-- TRUNCATE to every role but a superuser that drops them on purpose.
CREATE TABLE operator_actions (
    id         bigserial PRIMARY KEY,
    at         timestamptz NOT NULL,
    operator   text NOT NULL,              -- the key's name (`name:role:key`), or key-<fingerprint> for a bare key
    role       text NOT NULL,              -- viewer, support, admin
    action     text NOT NULL,              -- grant.create, grant.end, jobs.requeue, event.redeliver, …
    request    text NOT NULL,              -- "POST /admin/jobs/requeue": the route, without query or body
    status     smallint NOT NULL,          -- the HTTP status answered
    account_id text,
    target     text,                       -- the job, grant, event or request the action concerns
    before     jsonb,
    after      jsonb
);
CREATE INDEX operator_actions_at ON operator_actions (at);
CREATE INDEX operator_actions_account ON operator_actions (account_id, at) WHERE account_id IS NOT NULL;

CREATE FUNCTION operator_actions_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'operator_actions is append-only: % refused', TG_OP USING ERRCODE = 'insufficient_privilege';
END
$$;
CREATE TRIGGER operator_actions_no_change BEFORE UPDATE OR DELETE ON operator_actions
    FOR EACH ROW EXECUTE FUNCTION operator_actions_append_only();
CREATE TRIGGER operator_actions_no_truncate BEFORE TRUNCATE ON operator_actions
    FOR EACH STATEMENT EXECUTE FUNCTION operator_actions_append_only();
