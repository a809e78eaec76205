-- Stripe events Storekeeper keeps nothing of are kept as their envelope only. Every event was stored as received, but
-- an erasure scrubs only the events of the objects it keeps (ErasedAccounts+Stripe): an event of a type Storekeeper
-- does not read (`customer.updated`, `payment_method.attached`, `invoice.upcoming` — an endpoint set to send every
-- type), of the other livemode, or whose object turned out not to be Storekeeper's (another's charge, an object Stripe
-- no longer knows) kept the customer's name, email, address and metadata after the customer was erased. Nothing reads
-- such a body again (the worker reads objects from Stripe by the id in the row's columns), so it is reduced to what the
-- columns already say, once the event is known to be one of those.
--
-- The rule is the table's (a trigger), so it holds for every writer: a process of the release before, still storing
-- and marking events during a rolling upgrade, cannot leave a body behind once the backfill below has run.
--
-- Online: three functions and a trigger, no table change. Rows stored before this file are reduced after it by
-- SchemaMigrator's backfill (batches of short transactions of their own, recorded in storekeeper_backfills), not here.

-- The envelope of an event, from its row's columns.
CREATE FUNCTION stripe_event_envelope(id text, type text, livemode boolean, created_at timestamptz, object_id text, object_type text)
RETURNS bytea LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT convert_to(jsonb_build_object(
        'id', id, 'object', 'event', 'type', type, 'livemode', livemode, 'created', extract(epoch FROM created_at)::bigint,
        'data', jsonb_build_object('object', jsonb_strip_nulls(jsonb_build_object('id', object_id, 'object', object_type))),
        'storekeeper_envelope_only', true)::text, 'UTF8')
$$;

-- Whether an event's body is kept as received: not for the other livemode's events, nor once processing found nothing
-- of Storekeeper's in it (StripeEventJob's outcomes `acknowledged`, `no_subscription`, `not_found`). An event not
-- processed yet, or processed into objects an erasure scrubs with their events, keeps it. The backfill reads it; the
-- trigger below writes the same condition out (MigrationTests checks both against the same outcomes).
CREATE FUNCTION stripe_event_body_kept(ignored boolean, outcome text) RETURNS boolean LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT NOT ignored AND (outcome IS NULL OR outcome NOT IN ('acknowledged', 'no_subscription', 'not_found'))
$$;

-- A row stored, or marked processed, as one whose body is not kept keeps only its envelope. The condition is
-- stripe_event_body_kept's, written out: called as a function in the trigger's WHEN it cost the intake's insert about
-- 13 % (a pgbench A/B of the bare statement, 6 alternating rounds), written out 1.5 % (0.91–1.00, 4 rounds). A row
-- whose body is kept — every event Storekeeper reads, on the intake's path — calls nothing.
CREATE FUNCTION stripe_events_keep_envelope() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    NEW.body := stripe_event_envelope(NEW.id, NEW.type, NEW.livemode, NEW.created_at, NEW.object_id, NEW.object_type);
    RETURN NEW;
END
$$;
CREATE TRIGGER stripe_events_keep_envelope BEFORE INSERT OR UPDATE OF ignored, outcome ON stripe_events
    FOR EACH ROW WHEN (NEW.ignored OR NEW.outcome IN ('acknowledged', 'no_subscription', 'not_found'))
    EXECUTE FUNCTION stripe_events_keep_envelope();
