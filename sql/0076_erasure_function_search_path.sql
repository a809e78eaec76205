-- erase_operator_actions runs as the migrations' role (SECURITY DEFINER) under the search_path of its migration
-- (`"$user", public`). PostgreSQL looks for a table in the session's temporary schema before any schema of the path
-- unless `pg_temp` is named in it: a session of the application role that could create temporary tables made its own
-- `erasures`, filed a pseudonym there, and the function — reading `erasures` through erasure_in_this_transaction, which
-- runs under the function's path — rewrote the audit log's entries with no erasure on record (helper-147). The path is
-- now the function's own schema (where its tables are), then pg_temp: for the function and for what it calls. Like
-- every migration, this one must run as the role that owns the function (the one that ran sql/0031).
--
-- Online: one catalog row; the function's callers (erasures) wait for this file's commit.
DO $$
BEGIN
    EXECUTE format('ALTER FUNCTION erase_operator_actions(text, text) SET search_path = %I, pg_temp',
        (SELECT n.nspname FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
         WHERE p.oid = 'erase_operator_actions(text, text)'::regprocedure));
END
$$;
