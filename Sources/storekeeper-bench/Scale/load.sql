-- Storekeeper scale loader: fills a freshly migrated, empty Storekeeper database with generated subscribers and about
-- a year of their history, as the server would have written it. Driven by `storekeeper-bench scale` (ScaleLoader.swift);
-- what it generates and what it costs: docs/capacity.md, "The growth curve".
--
-- The caller first creates, on the connection that then runs every statement below in order:
--   CREATE TEMP TABLE scale_parameters (subscribers int, seed int, now timestamptz);
--   INSERT INTO scale_parameters VALUES (100000, 1, now());
-- Each statement is separated from the next by a line holding only "-- statement". The load runs in one transaction
-- (BEGIN ... COMMIT below): a failure leaves nothing behind (the caller must ROLLBACK or disconnect after an error).
-- The last statements (after COMMIT) are VACUUM (ANALYZE) of the loaded tables and a CHECKPOINT.
--
-- Needs: a superuser (session_replication_role), PostgreSQL 15 with lz4 (Debian/Ubuntu builds have it).
-- statement
BEGIN;
-- statement
-- The NOTIFY triggers of sql/0012 (one pg_notify per account: nobody listens during a load), the balance triggers of
-- sql/0041 (the balances are summed once, below) and with them sql/0055's check that a ledger row names a bucket
-- (checked once at the end instead, below) do not fire for this transaction's writes.
SET LOCAL session_replication_role = replica;
-- statement
SET LOCAL jit = off;
-- statement
SET LOCAL work_mem = '256MB';
-- statement
SET LOCAL maintenance_work_mem = '1GB';
-- statement
SET LOCAL synchronous_commit = off;
-- statement
SELECT CAST('load.sql: scale_parameters must hold exactly one row (subscribers >= 1, seed, now), it holds ' || count(*) AS int)
FROM scale_parameters HAVING count(*) <> 1 OR min(subscribers) < 1 OR bool_or(now IS NULL OR seed IS NULL);
-- statement
SELECT CAST('load.sql: the database must be freshly migrated and empty; it holds ' || count(*) || ' subscriptions, notifications or ledger rows' AS int)
FROM (SELECT 1 FROM subscriptions UNION ALL SELECT 1 FROM notifications UNION ALL SELECT 1 FROM credit_ledger LIMIT 1) AS found
HAVING count(*) > 0;
-- statement
-- The schema as migrated: the load drops some indexes and builds them again once the rows are in (faster than growing
-- them row by row), and checks before COMMIT that every index and constraint is back as it was.
-- scale_schema_now reads the catalogue whenever it is queried; scale_schema keeps what it read before the load.
CREATE TEMP VIEW scale_schema_now AS
SELECT 'index' AS kind, c.relname AS on_table, i.relname AS name, pg_get_indexdef(i.oid) AS definition
FROM pg_index x JOIN pg_class i ON i.oid = x.indexrelid JOIN pg_class c ON c.oid = x.indrelid
WHERE c.relnamespace = 'public'::regnamespace
UNION ALL
SELECT 'constraint', conrelid::regclass::text, conname, pg_get_constraintdef(oid) FROM pg_constraint
WHERE connamespace = 'public'::regnamespace
UNION ALL
SELECT 'column', c.relname, a.attname, a.attstorage::text || '/' || a.attcompression::text || '/' || coalesce(array_to_string(c.reloptions, ','), '')
FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid
WHERE c.relnamespace = 'public'::regnamespace AND c.relkind = 'r' AND a.attnum > 0 AND NOT a.attisdropped;
-- statement
CREATE TEMP TABLE scale_schema ON COMMIT DROP AS SELECT * FROM scale_schema_now;
-- statement
-- Month arithmetic in UTC, as Apple's renewals and Storekeeper's credit windows (CreditCalendar) count months.
CREATE FUNCTION pg_temp.sk_addm(t timestamptz, m int) RETURNS timestamptz LANGUAGE sql IMMUTABLE
AS $$ SELECT ((t AT TIME ZONE 'UTC') + make_interval(months => m)) AT TIME ZONE 'UTC' $$;
-- statement
-- The same instant moved back to the 28th when it falls later in the month: every anchor is on a day that every
-- month has, so anchor + k months is exactly Apple's k-th renewal and Storekeeper's k-th window.
CREATE FUNCTION pg_temp.sk_d28(t timestamptz) RETURNS timestamptz LANGUAGE sql STABLE
AS $$ SELECT t - make_interval(days => greatest(0, extract(day FROM t AT TIME ZONE 'UTC')::int - 28)) $$;
-- statement
CREATE FUNCTION pg_temp.sk_ms(t timestamptz) RETURNS bigint LANGUAGE sql STABLE
AS $$ SELECT (extract(epoch FROM t) * 1000)::bigint $$;
-- statement
CREATE FUNCTION pg_temp.sk_iso(t timestamptz) RETURNS text LANGUAGE sql STABLE
AS $$ SELECT to_char(t AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"') $$;
-- statement
-- a.b, truncated to whole milliseconds (every instant Storekeeper stores comes from Apple's milliseconds)
CREATE FUNCTION pg_temp.sk_at(t timestamptz, span interval, share float8) RETURNS timestamptz LANGUAGE sql STABLE
AS $$ SELECT date_trunc('milliseconds', t + span * share) $$;
-- statement
-- The products of config/tiers.yml that the generator sells, with their prices (milliunits, USD) and the allowances
-- of their tiers per billing period (credit window): ai_requests per_cycle / trial_cap, exports per_cycle (NULL:
-- unlimited, no bucket).
CREATE TEMP TABLE scale_product ON COMMIT DROP AS
SELECT * FROM (VALUES
    ('basic.monthly', 'basic', 3, 2990, 1, 200, 50, 20),
    ('basic.annual', 'basic', 3, 29990, 12, 200, 50, 20),
    ('pro.monthly', 'pro', 2, 9990, 1, 1000, 100, NULL),
    ('pro.annual', 'pro', 2, 99990, 12, 1000, 100, NULL),
    ('max.monthly', 'max', 1, 19990, 1, 3000, 3000, NULL),
    ('max.annual', 'max', 1, 199990, 12, 3000, 3000, NULL)
) AS p (product, tier, level, price, months, ai, ai_trial, exports);
-- statement
-- Constants of every generated payload: the app, the environment, and the placeholder JWS parts (see README.md: the
-- signed parts hold Apple-shaped JSON with placeholder signatures; one header row in signed_headers).
CREATE TEMP TABLE scale_constant ON COMMIT DROP AS
SELECT 'com.example.bench'::text AS bundle_id, 'Sandbox'::text AS environment, '21000001'::text AS group_id,
    sha256(convert_to(header, 'UTF8')) AS digest, header,
    sha256('\x01'::bytea) || sha256('\x02'::bytea) AS sig0, sha256('\x03'::bytea) || sha256('\x04'::bytea) AS sig1,
    sha256('\x05'::bytea) || sha256('\x06'::bytea) AS sig2
FROM (SELECT rtrim(translate(encode(convert_to('{"alg":"ES256","x5c":["storekeeper-scale-loader-placeholder"]}', 'UTF8'), 'base64'),
    E'+/\n', '-_'), '=') AS header) AS h;
-- statement
-- One row per subscriber: its kind of history and the instants that shape it. Categories (share of subscribers):
--  1 monthly, renewing (43 %)           2 monthly, auto-renew turned off, still active (4 %)
--  3 monthly, cancelled and expired (8 %) 4 annual, active (10 %; a third renewed once)
--  5 monthly, upgraded mid-period (7 %) 6 monthly, downgrade at a renewal or pending (3 %)
--  7 monthly, period in force refunded (3 %)  8 free trial converted, renewing (7 %)
--  9 free trial lapsed (3 %)            10 free trial running (1 %)
-- 11 billing grace period now (2 %)     12 billing retry now (3 %)
-- 13 billing retry ended, expired (2 %) 14 billing retry recovered, renewing (4 %)
CREATE TEMP TABLE scale_subscriber ON COMMIT DROP AS
WITH p AS (
    SELECT subscribers, seed, date_trunc('milliseconds', now) AS now FROM scale_parameters
    OFFSET 0
), h AS (
    SELECT g AS n, p.now,
        hashtextextended('scale:' || g, p.seed) AS h1,
        hashtextextended('scale:' || g || ':2', p.seed) AS h2,
        hashtextextended('scale:' || g || ':3', p.seed) AS h3
    FROM p CROSS JOIN generate_series(1, p.subscribers) AS g
    OFFSET 0
), u AS (
    SELECT n, now, h3,
        ((h1 & 1023) * 1000) >> 10 AS ucat,
        ((h1 >> 10) & 1023) / 1024.0 AS utier,
        ((h1 >> 20) & 1023) / 1024.0 AS ud,
        ((h1 >> 46) & 1023) / 1024.0 AS uk,
        (h2 & 1023) / 1024.0 AS uk2,
        ((h2 >> 10) & 1023) / 1024.0 AS ux,
        ((h2 >> 20) & 1023) / 1024.0 AS uy,
        ((h2 >> 30) & 1023) / 1024.0 AS uz,
        ((h2 >> 50) & 1023) / 1024.0 AS utop,
        -- time of day and milliseconds: 0 .. 23 h
        ((((h1 >> 30) & 65535) * 82800 / 65536) * 1000 + ((h2 >> 40) & 1023) % 1000) * interval '1 millisecond' AS jitter,
        -- Apple's delay between an event and its notification: 1 .. 263 s
        (1000 + (h3 & 262143)) * interval '1 millisecond' AS r
    FROM h
    OFFSET 0
), c AS (
    SELECT u.*,
        CASE WHEN ucat < 430 THEN 1 WHEN ucat < 470 THEN 2 WHEN ucat < 550 THEN 3 WHEN ucat < 650 THEN 4
             WHEN ucat < 720 THEN 5 WHEN ucat < 750 THEN 6 WHEN ucat < 780 THEN 7 WHEN ucat < 850 THEN 8
             WHEN ucat < 880 THEN 9 WHEN ucat < 890 THEN 10 WHEN ucat < 910 THEN 11 WHEN ucat < 940 THEN 12
             WHEN ucat < 960 THEN 13 ELSE 14 END AS cat,
        CASE WHEN utier < 0.3 THEN 'basic' WHEN utier < 0.8 THEN 'pro' ELSE 'max' END AS tier0,
        CASE WHEN uk < 0.7 THEN 12 ELSE 1 + floor(uk2 * 11)::int END AS k12,
        -- the start of the period in force of a subscriber renewing now: 3 h .. 27 days ago
        pg_temp.sk_d28(now - make_interval(days => floor(ud * 23)::int) - interval '3 hours' - jitter) AS lc
    FROM u
    OFFSET 0
), t AS (
    SELECT c.*,
        CASE
            WHEN cat = 4 THEN tier0
            WHEN cat IN (5, 8, 9, 10) AND tier0 = 'max' THEN 'pro'
            WHEN cat = 6 AND tier0 = 'basic' THEN 'pro'
            ELSE tier0 END AS tier,
        pg_temp.sk_d28(now - make_interval(days => 1 + floor(ux * 330)::int) - jitter) AS le,
        pg_temp.sk_d28(now - make_interval(days => 1 + floor(ux * 360)::int) - jitter) AS la,
        now - make_interval(days => 1 + floor(ux * 300)::int) - jitter AS rv,
        pg_temp.sk_d28(now - make_interval(days => floor(ud * 11)::int) - interval '3 hours' - jitter) AS lg,
        pg_temp.sk_d28(now - make_interval(days => floor(ud * 45)::int) - interval '3 hours' - jitter) AS lr,
        pg_temp.sk_d28(now - make_interval(days => 62 + floor(ux * 250)::int) - jitter) AS lx,
        now - make_interval(days => 8 + floor(ux * 350)::int) - jitter AS ts9,
        now - interval '3 hours' - floor(ux * 518400) * interval '1 second' AS ts10,
        1 + floor(uk * 8)::int AS kb,
        (uk < 0.3) AS renewed_annual,
        (k12 = 1 OR uy < 0.3) AS pending_downgrade
    FROM c
    OFFSET 0
), s AS (
    SELECT t.*,
        CASE cat WHEN 4 THEN tier || '.annual' ELSE tier || '.monthly' END AS pa,
        CASE cat
            WHEN 5 THEN CASE WHEN tier = 'basic' AND uz < 0.6 THEN 'pro' ELSE 'max' END || '.monthly'
            WHEN 6 THEN CASE tier WHEN 'pro' THEN 'basic' ELSE 'pro' END || '.monthly'
            WHEN 14 THEN tier || '.monthly' END AS pb,
        CASE cat WHEN 4 THEN 12 ELSE 1 END AS ma,
        CASE cat
            WHEN 8 THEN pg_temp.sk_addm(lc, -(k12 - 1)) - interval '7 days'
            WHEN 9 THEN ts9
            WHEN 10 THEN ts10 END AS trial_start,
        CASE cat
            WHEN 3 THEN 1 + floor(uk * 12)::int
            WHEN 4 THEN CASE WHEN renewed_annual THEN 2 ELSE 1 END
            WHEN 5 THEN 1 + floor(uk2 * 4)::int
            WHEN 6 THEN CASE WHEN pending_downgrade THEN k12 ELSE 1 + floor(ux * (k12 - 1))::int END
            WHEN 7 THEN 1 + floor(uk * 12)::int
            WHEN 9 THEN 0
            WHEN 10 THEN 0
            WHEN 13 THEN 1 + floor(uk * 12)::int
            WHEN 14 THEN 1 + floor(uk2 * 6)::int
            ELSE k12 END AS ca,
        CASE cat WHEN 5 THEN pg_temp.sk_addm(lc, -(kb - 1)) WHEN 14 THEN pg_temp.sk_addm(lc, -(kb - 1)) END AS bseg
    FROM t
    OFFSET 0
), a AS (
    SELECT s.*,
        CASE cat
            WHEN 3 THEN pg_temp.sk_addm(le, -ca)
            WHEN 4 THEN CASE WHEN renewed_annual THEN pg_temp.sk_addm(la, -12) ELSE la END
            WHEN 5 THEN pg_temp.sk_addm(pg_temp.sk_d28(bseg - make_interval(days => 2 + floor(uy * 22)::int)), -(ca - 1))
            WHEN 6 THEN pg_temp.sk_addm(lc, -(k12 - 1))
            WHEN 7 THEN pg_temp.sk_addm(pg_temp.sk_d28(date_trunc('milliseconds', rv) - make_interval(days => 1 + floor(uy * 24)::int)), -(ca - 1))
            WHEN 9 THEN NULL
            WHEN 10 THEN NULL
            WHEN 11 THEN pg_temp.sk_addm(lg, -ca)
            WHEN 12 THEN pg_temp.sk_addm(lr, -ca)
            WHEN 13 THEN pg_temp.sk_addm(lx, -ca)
            WHEN 14 THEN pg_temp.sk_addm(pg_temp.sk_d28(bseg - make_interval(days => 1 + floor(uy * 12)::int)
                - floor(uz * 72000) * interval '1 second'), -ca)
            ELSE pg_temp.sk_addm(lc, -(k12 - 1)) END AS a0
    FROM s
    OFFSET 0
), f AS (
SELECT n, now, cat, h3, r, ux, uy, uz, utop,
    -- UUIDv7-shaped, the subscriber's number where v7 has its timestamp: ids sort as subscribers are numbered, so the
    -- indexes keyed by account fill in order; the rest is md5('scale-' || n)
    lpad(to_hex(n >> 16), 8, '0') || '-' || lpad(to_hex(n & 65535), 4, '0') || '-7' || substr(md5('scale-' || n), 1, 3) || '-8'
        || substr(md5('scale-' || n), 4, 3) || '-' || substr(md5('scale-' || n), 7, 12) AS acct,
    9000000000000 + n AS otid,
    pa, pb, ma, trial_start, a0, ca,
    CASE cat WHEN 6 THEN pg_temp.sk_addm(a0, ca) ELSE bseg END AS b0,
    CASE cat WHEN 5 THEN kb WHEN 14 THEN kb WHEN 6 THEN k12 - ca ELSE 0 END AS cb,
    (trial_start IS NOT NULL)::int AS tr,
    CASE cat WHEN 7 THEN date_trunc('milliseconds', rv) END AS rv,
    CASE cat WHEN 11 THEN lg + interval '16 days' END AS grace_end,
    -- the end of the last paid period, where renewing failed
    CASE cat WHEN 11 THEN lg WHEN 12 THEN lr WHEN 13 THEN lx WHEN 14 THEN pg_temp.sk_addm(a0, ca) END AS failb,
    -- the times of the notifications that are not a new period's (see scale_note)
    CASE cat
        WHEN 2 THEN pg_temp.sk_at(lc + interval '1 hour', now - lc - interval '2 hours', ux)
        WHEN 3 THEN pg_temp.sk_at(pg_temp.sk_addm(le, -1), le - pg_temp.sk_addm(le, -1), 0.2 + 0.6 * uy)
        WHEN 6 THEN CASE WHEN pending_downgrade THEN pg_temp.sk_at(lc + interval '1 hour', now - lc - interval '2 hours', uz)
            ELSE pg_temp.sk_at(pg_temp.sk_addm(a0, ca - 1), pg_temp.sk_addm(a0, ca) - pg_temp.sk_addm(a0, ca - 1), 0.2 + 0.6 * uz) END
        WHEN 7 THEN date_trunc('milliseconds', rv) + r
        WHEN 9 THEN trial_start + make_interval(days => 1 + floor(uy * 5)::int)
        WHEN 11 THEN lg + r
        WHEN 12 THEN lr + r
        WHEN 13 THEN lx + r
        WHEN 14 THEN pg_temp.sk_addm(a0, ca) + r END AS tx1,
    CASE cat
        WHEN 3 THEN le + r
        WHEN 9 THEN trial_start + interval '7 days' + r
        WHEN 13 THEN lx + interval '60 days' + r END AS tx2,
    -- consumable top-ups the app posted (POST /v1/accounts/{id}/transactions): 8 % one, 4 % two
    CASE WHEN utop < 0.08 THEN 1 WHEN utop < 0.12 THEN 2 ELSE 0 END AS ntop
FROM a
    OFFSET 0
)
SELECT f.*, tr + ca + cb AS np, coalesce(trial_start, a0) AS first_start FROM f;
-- statement
-- One row per billing period (one transaction each): the free trial (T), the periods of the first product (A), the
-- periods after an upgrade, downgrade or billing recovery (B). Each is announced by one notification (scale_note).
CREATE TEMP TABLE scale_period ON COMMIT DROP AS
SELECT q.*,
    pr.tier, pr.level, pr.months, pr.ai, pr.ai_trial, pr.exports, pr.price AS list_price,
    CASE WHEN q.seg = 'T' THEN 0 ELSE pr.price END AS price,
    -- where its credit windows close: at an upgrade's switch, at a refund, or at the end of a grace period
    CASE
        WHEN q.cat = 5 AND q.seg = 'A' AND q.k = q.ca - 1 THEN q.b0
        WHEN q.cat = 7 AND q.i = q.np - 1 THEN q.rv
        WHEN q.cat = 11 AND q.i = q.np - 1 THEN q.grace_end
        ELSE q."end" END AS closes,
    q.start + q.r AS signed, q.start + q.r + q.rec_delay AS received, q.start + q.r + q.rec_delay + q.app_delay AS applied,
    (SELECT fp.price FROM scale_product fp WHERE fp.product = q.first_product) AS old_price
FROM (
    SELECT s.n, s.acct, s.otid, s.cat, s.np, s.ca, s.tr, s.h3, s.now, s.first_start, s.b0, s.rv, s.grace_end, s.ntop, g.i, x.seg, x.k,
        CASE x.seg WHEN 'B' THEN s.pb ELSE s.pa END AS product,
        x.seg = 'T' AS trial,
        CASE x.seg WHEN 'T' THEN s.trial_start WHEN 'A' THEN pg_temp.sk_addm(s.a0, x.k * s.ma) ELSE pg_temp.sk_addm(s.b0, x.k) END AS start,
        CASE x.seg WHEN 'T' THEN s.trial_start + interval '7 days'
            WHEN 'A' THEN pg_temp.sk_addm(s.a0, (x.k + 1) * s.ma) ELSE pg_temp.sk_addm(s.b0, x.k + 1) END AS "end",
        CASE WHEN g.i = 0 THEN s.otid ELSE s.otid * 1000 + g.i END::text AS txid,
        ((8000000000000 + s.n) * 1000 + g.i)::text AS woli,
        CASE WHEN g.i = 0 OR (s.cat = 5 AND x.seg = 'B' AND x.k = 0) THEN 'PURCHASE' ELSE 'RENEWAL' END AS reason,
        CASE WHEN g.i = 0 THEN 'SUBSCRIBED' WHEN s.cat = 5 AND x.seg = 'B' AND x.k = 0 THEN 'DID_CHANGE_RENEWAL_PREF' ELSE 'DID_RENEW' END AS ntype,
        CASE WHEN g.i = 0 THEN 'INITIAL_BUY' WHEN s.cat = 5 AND x.seg = 'B' AND x.k = 0 THEN 'UPGRADE'
            WHEN s.cat = 14 AND x.seg = 'B' AND x.k = 0 THEN 'BILLING_RECOVERY' END AS nsub,
        s.cat = 5 AND x.seg = 'B' AND x.k = 0 AS upgrade,
        CASE WHEN s.cat = 5 AND x.seg = 'B' AND x.k = 0 THEN pg_temp.sk_addm(s.a0, s.ca - 1) END AS old_start,
        CASE WHEN s.cat = 5 AND x.seg = 'B' AND x.k = 0 THEN pg_temp.sk_addm(s.a0, s.ca) END AS old_end,
        s.pa AS first_product,
        (1000 + ((s.h3 >> (g.i % 40)) & 131071)) * interval '1 millisecond' AS r,
        (20 + ((s.h3 >> 18) & 127)) * interval '1 millisecond' AS rec_delay,
        (3 + ((s.h3 >> 25) & 15)) * interval '1 millisecond' AS app_delay
    FROM scale_subscriber s
    CROSS JOIN LATERAL generate_series(0, s.np - 1) AS g(i)
    CROSS JOIN LATERAL (SELECT
        CASE WHEN s.tr = 1 AND g.i = 0 THEN 'T' WHEN g.i - s.tr < s.ca THEN 'A' ELSE 'B' END AS seg,
        CASE WHEN s.tr = 1 AND g.i = 0 THEN 0 WHEN g.i - s.tr < s.ca THEN g.i - s.tr ELSE g.i - s.tr - s.ca END AS k) AS x
    OFFSET 0
) AS q
JOIN scale_product pr ON pr.product = q.product;
-- statement
-- Every notification Apple sent (scale_note, below): one per period (SUBSCRIBED, DID_RENEW, an upgrade's
-- DID_CHANGE_RENEWAL_PREF, a BILLING_RECOVERY) and up to two more per subscriber (auto-renew off, downgrade, refund,
-- billing failure, expiry) — these, with the transaction and renewal info each carries.
CREATE TEMP TABLE scale_extra ON COMMIT DROP AS
SELECT p.n, p.acct, p.otid, p.cat, 1000 + e.slot AS slot, p.i AS pi, p.np,
    md5('scale-notification:' || p.n || ':' || (1000 + e.slot))::uuid AS uuid,
    x.ntype, x.nsub, x.status, e.signed, e.signed + p.rec_delay AS received, e.signed + p.rec_delay + p.app_delay AS applied,
    p.txid, p.woli, p.product, p.start, p."end", p.price, p.trial, p.reason, p.first_start,
    CASE WHEN x.ntype = 'REFUND' THEN s.rv END AS revoked,
    x.ars, coalesce(x.arp, p.product) AS arp, ap.price AS arprice, x.intent, x.retry,
    CASE WHEN x.ntype = 'DID_FAIL_TO_RENEW' THEN s.grace_end END AS grace,
    p.tier, p.seg, p.k, p.upgrade, p.first_product, CASE WHEN p.trial THEN p.ai_trial ELSE p.ai END AS ai, p.exports
FROM scale_subscriber s
CROSS JOIN LATERAL (VALUES (1, s.tx1), (2, s.tx2)) AS e(slot, signed)
JOIN scale_period p ON p.n = s.n AND p.i = CASE s.cat WHEN 6 THEN s.tr + s.ca - 1 WHEN 14 THEN s.ca - 1 WHEN 9 THEN 0 ELSE s.np - 1 END
CROSS JOIN LATERAL (SELECT * FROM (VALUES
    -- (category, slot): type, subtype, data.status, autoRenewStatus, autoRenewProductId, expirationIntent, isInBillingRetryPeriod
    (2, 1, 'DID_CHANGE_RENEWAL_STATUS', 'AUTO_RENEW_DISABLED', 1, 0, NULL, NULL::int, NULL::boolean),
    (3, 1, 'DID_CHANGE_RENEWAL_STATUS', 'AUTO_RENEW_DISABLED', 1, 0, NULL, NULL, NULL),
    (3, 2, 'EXPIRED', 'VOLUNTARY', 2, 0, NULL, 1, false),
    (6, 1, 'DID_CHANGE_RENEWAL_PREF', 'DOWNGRADE', 1, 1, s.pb, NULL, NULL),
    (7, 1, 'REFUND', NULL, 5, 0, NULL, NULL, NULL),
    (9, 1, 'DID_CHANGE_RENEWAL_STATUS', 'AUTO_RENEW_DISABLED', 1, 0, NULL, NULL, NULL),
    (9, 2, 'EXPIRED', 'VOLUNTARY', 2, 0, NULL, 1, false),
    (11, 1, 'DID_FAIL_TO_RENEW', 'GRACE_PERIOD', 4, 1, NULL, NULL, true),
    (12, 1, 'DID_FAIL_TO_RENEW', NULL, 3, 1, NULL, NULL, true),
    (13, 1, 'DID_FAIL_TO_RENEW', NULL, 3, 1, NULL, NULL, true),
    (13, 2, 'EXPIRED', 'BILLING_RETRY', 2, 1, NULL, 2, false),
    (14, 1, 'DID_FAIL_TO_RENEW', NULL, 3, 1, NULL, NULL, true)
) AS v (cat, slot, ntype, nsub, status, ars, arp, intent, retry) WHERE v.cat = s.cat AND v.slot = e.slot) AS x
JOIN scale_product ap ON ap.product = coalesce(x.arp, p.product)
WHERE e.signed IS NOT NULL;
-- statement
-- Every notification: the one of each period, then the others.
CREATE TEMP VIEW scale_note AS
SELECT p.n, p.acct, p.otid, p.cat, p.i AS slot, p.i AS pi, p.np,
    md5('scale-notification:' || p.n || ':' || p.i)::uuid AS uuid,
    p.ntype, p.nsub, 1 AS status, p.signed, p.received, p.applied,
    p.txid, p.woli, p.product, p.start, p."end", p.price, p.trial, p.reason, p.first_start, NULL::timestamptz AS revoked,
    1 AS ars, p.product AS arp, p.list_price AS arprice, NULL::int AS intent, NULL::boolean AS retry, NULL::timestamptz AS grace,
    p.tier, p.seg, p.k, p.upgrade, p.first_product, CASE WHEN p.trial THEN p.ai_trial ELSE p.ai END AS ai, p.exports
FROM scale_period p
UNION ALL
SELECT * FROM scale_extra;
-- statement
-- The header every generated part names (a placeholder: see README.md, "verify --stored").
INSERT INTO signed_headers (digest, segment) SELECT digest, header FROM scale_constant ON CONFLICT (digest) DO NOTHING;
-- statement
-- The indexes of sql/0001 and 0006, built again after the insert (below).
ALTER TABLE notifications DROP CONSTRAINT notifications_pkey;
-- statement
DROP INDEX notifications_subscription, notifications_received, notifications_rejected_account;
-- statement
-- Storekeeper compresses a notification's signed parts itself (deflate, ~0.88 KB here). The generator writes them as a
-- raw deflate stream that stores them uncompressed (~1.65 KB), led by empty stored blocks (5 bytes each, no output)
-- that take the row past the size at which PostgreSQL compresses a value in the row: for this insert the column is
-- EXTENDED with lz4 (~1.05 KB on disk), then put back as sql/0013 has it (EXTERNAL) — checked before COMMIT.
-- Storekeeper reads the value as PostgreSQL returns it, the deflate stream, and inflates it as it does its own.
ALTER TABLE notifications ALTER COLUMN signed_parts SET STORAGE EXTENDED, ALTER COLUMN signed_parts SET COMPRESSION lz4;
-- statement
-- Notifications received more than STOREKEEPER_SIGNED_RETENTION_DAYS (396) ago are stored as the hourly
-- signed-payload-retention job leaves them (SignedPayloadArchive.clearSignedPayloads): signed parts cleared, the verified
-- facts in `decoded` (not compressed: as the job's UPDATE leaves them).
INSERT INTO notifications (notification_uuid, notification_type, subtype, environment, original_transaction_id, signed_date,
    signed_parts, decoded, received_at, applied_at, apply_outcome)
SELECT uuid, ntype, nsub, env, otid::text, pg_temp.sk_ms(signed),
    -- raw deflate: empty stored blocks (BFINAL=0 BTYPE=00, LEN 0, NLEN 0xFFFF), then one final stored block (BFINAL=1
    -- BTYPE=00, LEN and NLEN little-endian) holding the bytes
    CASE WHEN NOT cleared THEN
        substring(decode(repeat('000000ffff', 400), 'hex') FROM 1 FOR 5 * greatest(0, (1965 - len) / 5 + 1))
        || set_byte(set_byte(set_byte(set_byte('\x0100000000'::bytea, 1, len & 255), 2, len >> 8), 3, (~len) & 255), 4, ((~len) >> 8) & 255)
        || encoded END,
    CASE WHEN cleared THEN ('{"payload":' || replace(body0, '"signedTransactionInfo":"","signedRenewalInfo":"",', '')
        || ',"transaction":' || body1 || ',"renewalInfo":' || body2 || '}')::jsonb END,
    received, applied, 'applied'
FROM (
    SELECT b.*, octet_length(encoded) AS len FROM (
        -- SignedParts.encoded, version 1: 1 | n | n digests | n signatures | (offset | name length | name) of the nested
        -- parts | n body lengths | bodies (Sources/SignedData/SignedParts.swift)
        SELECT a.*,
            '\x0103'::bytea || a.digest || a.digest || a.digest || a.sig0 || a.sig1 || a.sig2
            || int4send(octet_length(a.p1)) || '\x15'::bytea || 'signedTransactionInfo'::bytea
            || int4send(octet_length(a.p1) + 23) || '\x11'::bytea || 'signedRenewalInfo'::bytea
            || int4send(octet_length(a.body0)) || int4send(octet_length(a.body1)) || int4send(octet_length(a.body2))
            || textsend(a.body0) || textsend(a.body1) || textsend(a.body2) AS encoded,
            a.received < a.now - interval '396 days' AS cleared
        FROM (
            SELECT x.*, x.p1 || '","signedRenewalInfo":"' || x.p2 AS body0 FROM (
                SELECT t.*, c.environment AS env, c.digest, c.sig0, c.sig1, c.sig2, p.now,
                    '{"notificationType":"' || t.ntype || '"' || coalesce(',"subtype":"' || t.nsub || '"', '')
                        || ',"notificationUUID":"' || t.uuid || '","data":{"bundleId":"' || c.bundle_id
                        || '","bundleVersion":"1","environment":"' || c.environment || '","signedTransactionInfo":"' AS p1,
                    '","status":' || t.status || '},"version":"2.0","signedDate":' || pg_temp.sk_ms(t.signed) || '}' AS p2,
                    '{"transactionId":"' || t.txid || '","originalTransactionId":"' || t.otid || '","webOrderLineItemId":"' || t.woli
                        || '","bundleId":"' || c.bundle_id || '","productId":"' || t.product || '","subscriptionGroupIdentifier":"'
                        || c.group_id || '","purchaseDate":' || pg_temp.sk_ms(t.start) || ',"originalPurchaseDate":'
                        || pg_temp.sk_ms(t.first_start) || ',"expiresDate":' || pg_temp.sk_ms(t."end")
                        || ',"quantity":1,"type":"Auto-Renewable Subscription","appAccountToken":"' || t.acct
                        || '","inAppOwnershipType":"PURCHASED","signedDate":' || pg_temp.sk_ms(t.signed) || ',"environment":"'
                        || c.environment || '","transactionReason":"' || t.reason
                        || '","storefront":"USA","storefrontId":"143441","price":' || t.price || ',"currency":"USD","appTransactionId":"'
                        || (6000000000000 + t.n) || '"'
                        || CASE WHEN t.trial THEN ',"offerType":1,"offerDiscountType":"FREE_TRIAL","offerPeriod":"P1W"' ELSE '' END
                        || coalesce(',"revocationDate":' || pg_temp.sk_ms(t.revoked) || ',"revocationReason":0,"revocationType":"REFUND_FULL"', '')
                        || '}' AS body1,
                    '{"originalTransactionId":"' || t.otid || '","autoRenewProductId":"' || t.arp || '","productId":"' || t.product
                        || '","autoRenewStatus":' || t.ars || ',"signedDate":' || pg_temp.sk_ms(t.signed) || ',"environment":"'
                        || c.environment || '","recentSubscriptionStartDate":' || pg_temp.sk_ms(t.first_start) || ',"renewalDate":'
                        || pg_temp.sk_ms(t."end") || ',"currency":"USD","renewalPrice":' || t.arprice || ',"appTransactionId":"'
                        || (6000000000000 + t.n) || '","appAccountToken":"' || t.acct || '"'
                        || coalesce(',"expirationIntent":' || t.intent, '') || coalesce(',"isInBillingRetryPeriod":' || t.retry, '')
                        || coalesce(',"gracePeriodExpiresDate":' || pg_temp.sk_ms(t.grace), '') || '}' AS body2
                FROM scale_note t CROSS JOIN scale_constant c CROSS JOIN (SELECT date_trunc('milliseconds', now) AS now FROM scale_parameters) AS p
                OFFSET 0
            ) AS x
            OFFSET 0
        ) AS a
        OFFSET 0
    ) AS b
    OFFSET 0
) AS d;
-- statement
ALTER TABLE notifications ALTER COLUMN signed_parts SET STORAGE EXTERNAL, ALTER COLUMN signed_parts SET COMPRESSION DEFAULT;
-- statement
ALTER TABLE notifications ADD CONSTRAINT notifications_pkey PRIMARY KEY (notification_uuid);
-- statement
CREATE INDEX notifications_subscription ON notifications (original_transaction_id, signed_date) WHERE original_transaction_id IS NOT NULL;
-- statement
CREATE INDEX notifications_received ON notifications (received_at DESC);
-- statement
CREATE INDEX notifications_rejected_account ON notifications ((decoded->'transaction'->>'appAccountToken')) WHERE rejected_reason IS NOT NULL;
-- statement
-- Each subscription as Lifecycle.derive leaves it: the period in force is the last one, Apple's newest report decides.
INSERT INTO subscriptions (original_transaction_id, account_id, product_id, environment, status, will_renew, auto_renew_product_id,
    pending_product_id, purchase_date, expires_at, grace_period_expires_at, is_trial, ownership, latest_transaction_id,
    last_event_type, last_signed_date, last_event_id, end_reason, revoked_at, offer_type, offer_identifier, offer_discount_type,
    offer_period, price_increase, price, billing_period, access_until, created_at, updated_at, store)
SELECT s.otid::text, s.acct, p.product, c.environment,
    CASE WHEN s.cat IN (3, 9, 13) THEN 'expired' WHEN s.cat = 7 THEN 'refunded' WHEN s.cat = 11 THEN 'grace_period'
        WHEN s.cat = 12 THEN 'billing_retry' ELSE 'active' END,
    s.cat NOT IN (2, 3, 7, 9, 13) AND last.ars = 1,
    last.arp, NULLIF(last.arp, p.product),
    p.start, p."end", CASE WHEN s.cat = 11 THEN s.grace_end END, p.trial, 'PURCHASED', p.txid,
    last.ntype, pg_temp.sk_ms(last.signed), last.uuid::text,
    CASE s.cat WHEN 3 THEN 'EXPIRED_VOLUNTARY' WHEN 9 THEN 'EXPIRED_VOLUNTARY' WHEN 13 THEN 'EXPIRED_BILLING_RETRY' WHEN 7 THEN 'REFUND' END,
    CASE WHEN s.cat = 7 THEN s.rv END,
    CASE WHEN p.trial THEN 1 END, NULL, CASE WHEN p.trial THEN 'FREE_TRIAL' END, CASE WHEN p.trial THEN 'P1W' END,
    NULL, p.price, p.woli, NULL, first.applied, last.applied, 'app_store'
FROM scale_subscriber s
JOIN scale_period p ON p.n = s.n AND p.i = s.np - 1
JOIN (SELECT n, applied FROM scale_period WHERE i = 0) AS first ON first.n = s.n
JOIN (SELECT DISTINCT ON (n) n, ntype, signed, uuid, applied, ars, arp FROM scale_note WHERE slot = np - 1 OR slot > 1000
    ORDER BY n, signed DESC) AS last ON last.n = s.n
CROSS JOIN scale_constant c;
-- statement
-- The archive of ended subscriptions (Lifecycle.ends, SubscriptionArchive.sync): an expiry Apple reported, a refund.
INSERT INTO subscription_archive (original_transaction_id, transaction_id, reason, account_id, product_id, ended_at, archived_at)
SELECT t.otid::text, t.txid, CASE WHEN t.ntype = 'REFUND' THEN 'REFUND' ELSE 'EXPIRED_' || t.nsub END, t.acct, p.product,
    CASE WHEN t.ntype = 'REFUND' THEN t.revoked ELSE t."end" END, t.applied
FROM scale_extra t JOIN scale_period p ON p.n = t.n AND p.i = t.np - 1
WHERE t.ntype IN ('EXPIRED', 'REFUND');
-- statement
-- Every credit window of every period (CreditWindows: monthly windows of annual periods, the last one ending at
-- Apple's end; closed at an upgrade's switch or a refund, stretched to the end of a grace period) and meter with a
-- cycle allowance, that has opened by now; what it was granted, and how much of it was spent.
CREATE TEMP TABLE scale_window ON COMMIT DROP AS
WITH w AS (
    SELECT p.n, p.acct, p.otid, p.cat, p.i, p.np, p.ca, p.seg, p.k, p.woli, p.product, p.trial, p.price, p.now, p.h3, p.ntop,
        p.start, p."end", p.applied, p.upgrade, p.old_start, p.old_end, p.old_price, p.ai, p.ai_trial, p.exports, p.list_price, p.tier, g.w,
        CASE WHEN g.w = 0 THEN p.start ELSE pg_temp.sk_addm(p.start, g.w) END AS wstart,
        CASE WHEN g.w = p.months - 1 THEN p.closes ELSE least(pg_temp.sk_addm(p.start, g.w + 1), p.closes) END AS wend
    FROM scale_period p CROSS JOIN LATERAL generate_series(0, p.months - 1) AS g(w)
    OFFSET 0
), m AS (
    SELECT w.*, mt.meter,
        'cycle:' || w.woli || ':w' || w.w || ':' || mt.meter AS bucket,
        CASE mt.meter WHEN 'ai_requests' THEN CASE WHEN w.trial THEN w.ai_trial ELSE w.ai END ELSE w.exports END AS allowance,
        CASE WHEN w.w = 0 THEN w.applied ELSE w.wstart + (200 + ((w.h3 >> 8) & 511)) * interval '1 millisecond' END AS granted_at,
        hashtextextended(w.woli || ':' || w.w || ':' || mt.meter, w.h3) AS hw
    FROM w CROSS JOIN (VALUES ('ai_requests'), ('exports')) AS mt(meter)
    WHERE (w.w = 0 OR w.wstart <= w.now) AND (mt.meter = 'ai_requests' OR w.exports IS NOT NULL)
    OFFSET 0
), o AS (
    SELECT m.*,
        CASE WHEN m.upgrade THEN
            -- SubscriptionCredits.upgradeGrant / Proration.upgradeGrant: the share of the new price paid after Apple's
            -- pro-rata refund of the old window's rest (the old period is the one before, monthly)
            floor(m.allowance * greatest(0, m.price::numeric * (pg_temp.sk_ms(m.old_end) - pg_temp.sk_ms(m.old_start))
                    - m.old_price::numeric * (pg_temp.sk_ms(m.old_end) - pg_temp.sk_ms(m.start)))
                / (m.price::numeric * (pg_temp.sk_ms(m.old_end) - pg_temp.sk_ms(m.old_start))))::bigint
        ELSE m.allowance END AS granted,
        CASE WHEN m.upgrade AND m.w = 0 THEN 'prorated upgrade grant' WHEN m.trial THEN 'free offer grant' ELSE 'window grant' END AS reason,
        m.granted_at + interval '1 minute' AS spend_from,
        least(m.wend, m.now) - interval '1 minute' AS spend_to
    FROM m
    OFFSET 0
), q AS (
    SELECT o.*,
        CASE WHEN o.spend_to <= o.spend_from THEN 0
            ELSE floor(
                floor(o.granted * least(1.0, CASE o.meter WHEN 'ai_requests' THEN 1.15 ELSE 0.8 END * ((o.hw & 1023) / 1024.0)))
                -- the window in force has been spent in so far as it has run
                * CASE WHEN o.wend > o.now THEN extract(epoch FROM o.now - o.wstart) / extract(epoch FROM o.wend - o.wstart) ELSE 1 END
            )::bigint END AS spent
    FROM o
    OFFSET 0
)
SELECT n, acct, otid, cat, i, np, ca, seg, woli, product, w, meter, bucket, wstart, wend, price, list_price, granted, reason, granted_at, now,
    trial, tier, "end", ai, exports,
    spent, CASE WHEN spent = 0 THEN 0 ELSE least(spent, 1 + ((hw >> 10) & 1)) END AS spends,
    pg_temp.sk_ms(spend_from) AS from_ms, pg_temp.sk_ms(spend_to) AS to_ms,
    -- an upgraded period's window: what is left moves to top-ups at the switch; a refunded one: what is left is taken back
    cat = 5 AND seg = 'A' AND i = ca - 1 AS upgraded, cat = 7 AND i = np - 1 AS refunded,
    cat = 5 OR ntop > 0 AS topped_up
FROM q;
-- statement
-- Top-up credits: an upgrade's carry-over (SubscriptionCredits.carryOver) and consumables the app posted (TopUpCredits).
CREATE TEMP TABLE scale_topup ON COMMIT DROP AS
SELECT w.n, w.acct, w.meter, nxt.applied AS at, w.granted - w.spent AS amount,
    'carry:' || nxt.woli || ':' || w.bucket || ':in' AS operation_key, 'upgrade carry-over' AS reason,
    w.bucket AS out_bucket, 'carry:' || nxt.woli || ':' || w.bucket || ':out' AS out_key
FROM scale_window w JOIN scale_period nxt ON nxt.n = w.n AND nxt.i = w.i + 1
WHERE w.upgraded AND w.granted > w.spent
UNION ALL
SELECT s.n, s.acct, 'ai_requests', date_trunc('milliseconds', s.first_start + (s.now - s.first_start) * (0.1 + 0.8 * ((s.h3 >> (20 * j)) & 1023) / 1024.0)),
    CASE WHEN (s.h3 >> (30 + j)) & 3 = 0 THEN 500 ELSE 100 END,
    'topup:' || ((7000000000000 + s.n) * 10 + j), 'top-up ' || CASE WHEN (s.h3 >> (30 + j)) & 3 = 0 THEN 'credits.500' ELSE 'credits.100' END,
    NULL, NULL
FROM scale_subscriber s CROSS JOIN LATERAL generate_series(1, s.ntop) AS j;
-- statement
CREATE INDEX ON scale_topup (n);
-- statement
INSERT INTO credit_buckets (key, meter, kind, original_transaction_id, billing_period, account_id, valid_from, valid_until, price)
SELECT bucket, meter, 'cycle', otid::text, woli, NULL, wstart, wend, price FROM scale_window
UNION ALL
SELECT DISTINCT 'topup:' || acct || ':' || meter, meter, 'topup', NULL, NULL, acct, timestamptz '1970-01-01 00:00:00+00', NULL::timestamptz, NULL::bigint
FROM scale_topup;
-- statement
INSERT INTO credit_ledger (operation_key, bucket, delta, reason, created_at)
SELECT 'grant:' || woli || ':w' || w || ':' || meter, bucket, granted, reason, granted_at FROM scale_window WHERE granted > 0;
-- statement
-- The spends of each window: a few requests (POST /v1/accounts/{id}/usage), each taken from the window's bucket
-- (SpendCredits: cycle credits first), with its stored first answer in usage_requests (below).
CREATE TEMP TABLE scale_spend ON COMMIT DROP AS
SELECT x.n, x.acct, x.meter, x.bucket, x.idempotency_key, x.amount, x.at, x.cycle_left,
    x.cycle_left + CASE WHEN x.topped_up
        THEN coalesce((SELECT sum(t.amount) FROM scale_topup t WHERE t.n = x.n AND t.meter = x.meter AND t.at < x.at), 0) ELSE 0 END AS remaining
FROM (
    SELECT w.n, w.acct, w.meter, w.bucket, w.topped_up,
        md5('scale-spend:' || w.bucket || ':' || j)::uuid::text AS idempotency_key,
        w.spent * j / w.spends - w.spent * (j - 1) / w.spends AS amount,
        timestamptz '1970-01-01 00:00:00+00'
            + (w.from_ms + (w.to_ms - w.from_ms) * j / (w.spends + 1)) * interval '1 millisecond' AS at,
        w.granted - w.spent * j / w.spends AS cycle_left
    FROM scale_window w CROSS JOIN LATERAL generate_series(1, w.spends) AS j
    OFFSET 0
) AS x;
-- statement
INSERT INTO credit_ledger (operation_key, bucket, delta, reason, created_at)
SELECT 'spend:36:' || acct || ':' || idempotency_key || ':0', bucket, -amount, 'usage', at FROM scale_spend;
-- statement
-- Only the answers of the idempotency window's last 30 days (STOREKEEPER_IDEMPOTENCY_WINDOW_DAYS): its hourly job has
-- deleted the older ones, keeping each account's last spend among them (account_last_spends).
INSERT INTO usage_requests (account_id, idempotency_key, meter, amount, outcome, answer, created_at)
SELECT acct, idempotency_key, meter, amount, 'spent', jsonb_build_object('meter', meter, 'outcome', 'spent', 'remaining', remaining), at
FROM scale_spend WHERE at >= (SELECT date_trunc('milliseconds', now) - interval '30 days' FROM scale_parameters);
-- statement
INSERT INTO account_last_spends (account_id, spent_at)
SELECT acct, max(at) FROM scale_spend WHERE at < (SELECT date_trunc('milliseconds', now) - interval '30 days' FROM scale_parameters)
GROUP BY acct;
-- statement
-- Top-ups (carry-overs in and out, consumables), and refunds: what was left of a refunded period's windows.
INSERT INTO credit_ledger (operation_key, bucket, delta, reason, created_at)
SELECT out_key, out_bucket, -amount, reason, at FROM scale_topup WHERE out_key IS NOT NULL
UNION ALL
SELECT operation_key, 'topup:' || acct || ':' || meter, amount, reason, at FROM scale_topup
UNION ALL
SELECT 'refund:' || w.woli || ':' || pg_temp.sk_ms(t.revoked) || ':' || w.bucket, w.bucket, -(w.granted - w.spent), 'refund', t.applied
FROM scale_window w JOIN scale_extra t ON t.n = w.n AND t.slot = 1001
WHERE w.refunded AND w.granted > w.spent;
-- statement
-- A ledger row names a bucket that exists (sql/0055), checked once for every row written (the triggers did not fire).
SELECT CAST('load.sql: ledger rows without their bucket: ' || count(*) AS int)
FROM credit_ledger l WHERE NOT EXISTS (SELECT 1 FROM credit_buckets b WHERE b.key = l.bucket) HAVING count(*) > 0;
-- statement
-- Each bucket's kept balance (sql/0041): its trigger did not fire either.
INSERT INTO credit_bucket_balances (bucket, balance) SELECT bucket, sum(delta) FROM credit_ledger GROUP BY bucket;
-- statement
-- Jobs. A processed history leaves: `credit-reset` jobs waiting for the next monthly window of each annual period in
-- force (SubscriptionWriter.scheduleNextWindow), and in job_history the jobs finished in the last 7 days (the worker
-- prunes older ones): the apply of each notification, the credit resets, the hourly retention jobs.
INSERT INTO jobs (kind, run_at, args, unique_key, concurrency_key, created_at)
SELECT 'credit-reset', nxt.wstart, jsonb_build_object('originalTransactionId', p.otid::text),
    'credit-reset:' || p.woli || ':' || floor(extract(epoch FROM nxt.wstart))::bigint, 'subscription:' || p.otid,
    coalesce(prev.granted_at, p.applied)
FROM scale_period p
CROSS JOIN LATERAL (SELECT min(pg_temp.sk_addm(p.start, k)) AS wstart FROM generate_series(1, 11) AS k
    WHERE pg_temp.sk_addm(p.start, k) > p.now) AS nxt
LEFT JOIN scale_window prev ON prev.n = p.n AND prev.i = p.i AND prev.meter = 'ai_requests'
    AND prev.wstart = (SELECT max(pg_temp.sk_addm(p.start, k)) FROM generate_series(0, 11) AS k WHERE pg_temp.sk_addm(p.start, k) <= p.now)
WHERE p.months = 12 AND p.i = p.np - 1 AND nxt.wstart IS NOT NULL
ORDER BY nxt.wstart;
-- statement
INSERT INTO job_history (id, kind, state, attempt, args, errors, unique_key, created_at, finished_at)
SELECT nextval(pg_get_serial_sequence('jobs', 'id')), kind, 'completed', 1, args, '[]'::jsonb, unique_key, created_at, finished_at
FROM (
    SELECT 'apply-notification' AS kind,
        jsonb_build_object('accountTokens', jsonb_build_array(upper(t.acct)), 'notificationUUID', upper(t.uuid::text)) AS args,
        'apply:' || upper(t.uuid::text) AS unique_key, t.received AS created_at, t.applied AS finished_at
    FROM scale_note t WHERE t.applied >= (SELECT now FROM scale_subscriber LIMIT 1) - interval '7 days'
    UNION ALL
    SELECT 'credit-reset', jsonb_build_object('originalTransactionId', w.otid::text),
        'credit-reset:' || w.woli || ':' || floor(extract(epoch FROM w.wstart))::bigint,
        w.wstart - interval '1 month', w.granted_at
    FROM scale_window w WHERE w.w > 0 AND w.meter = 'ai_requests' AND w.granted_at >= w.now - interval '7 days'
    UNION ALL
    SELECT j.kind, '{}'::jsonb, 'periodic:' || j.kind || ':' || floor(extract(epoch FROM slot))::bigint, slot + interval '2 seconds',
        slot + interval '2 seconds' + interval '31 milliseconds'
    FROM (SELECT date_trunc('hour', now AT TIME ZONE 'UTC') AT TIME ZONE 'UTC' AS now FROM scale_parameters) AS p
    CROSS JOIN generate_series(p.now - interval '167 hours', p.now, interval '1 hour') AS slot
    CROSS JOIN (VALUES ('event-retention'), ('signed-payload-retention')) AS j(kind)
) AS finished
ORDER BY finished_at;
-- statement
-- The status document an event carries (StatusDocuments: the account's status as the change left it), written as
-- JSONWriter writes it (sorted keys, dates to the second).
CREATE FUNCTION pg_temp.sk_status(acct text, otid bigint, state text, tier text, product text, arp text, expires timestamptz,
    grace timestamptz, is_trial boolean, will_renew boolean, sub_status text, ai_cycle bigint, top_up bigint, ex_cycle bigint,
    resets timestamptz, at timestamptz) RETURNS text LANGUAGE sql STABLE AS $$
SELECT '{"accountId":"' || acct || '","credits":{"ai_requests":'
    || CASE WHEN entitled THEN '{"cycle":' || ai_cycle || ',"dailyRemaining":null,"remaining":' || (ai_cycle + top_up)
            || ',"resetsAt":"' || pg_temp.sk_iso(resets) || '","topUp":' || top_up || ',"unlimited":false}'
        ELSE '{"cycle":null,"dailyRemaining":5,"remaining":' || (5 + top_up) || ',"resetsAt":"'
            || pg_temp.sk_iso(date_trunc('day', at AT TIME ZONE 'UTC') AT TIME ZONE 'UTC' + interval '1 day') || '","topUp":' || top_up
            || ',"unlimited":false}' END
    || ',"exports":'
    || CASE WHEN NOT entitled THEN '{"cycle":3,"dailyRemaining":null,"remaining":3,"resetsAt":"'
            || pg_temp.sk_iso((date_trunc('month', at AT TIME ZONE 'UTC') + interval '1 month') AT TIME ZONE 'UTC')
            || '","topUp":0,"unlimited":false}'
        WHEN tier = 'basic' THEN '{"cycle":' || coalesce(ex_cycle, 0) || ',"dailyRemaining":null,"remaining":' || coalesce(ex_cycle, 0)
            || ',"resetsAt":"' || pg_temp.sk_iso(resets) || '","topUp":0,"unlimited":false}'
        ELSE '{"cycle":null,"dailyRemaining":null,"remaining":null,"resetsAt":null,"topUp":0,"unlimited":true}' END
    || '},"entitled":' || entitled || ',"entitlements":'
    || CASE WHEN entitled THEN '[{"expiresAt":"' || pg_temp.sk_iso(coalesce(grace, expires)) || '","id":"' || otid
            || '","managementUrl":"https:\/\/apps.apple.com\/account\/subscriptions","productId":"' || product
            || '","source":"subscription","store":"app_store","tier":"' || tier || '","willRenew":' || will_renew || '}]'
        ELSE '[]' END
    || ',"features":' || CASE WHEN NOT entitled THEN '{"history_days":7,"images":false,"model":"standard"}'
        WHEN tier = 'basic' THEN '{"history_days":30,"images":false,"model":"standard"}'
        WHEN tier = 'pro' THEN '{"history_days":365,"images":true,"model":"advanced"}'
        ELSE '{"history_days":3650,"images":true,"model":"advanced"}' END
    || ',"hadSubscription":true,"nextChangeAt":'
    || CASE WHEN entitled THEN '"' || pg_temp.sk_iso(coalesce(grace, expires)) || '"'
        WHEN sub_status = 'billing_retry' THEN '"' || pg_temp.sk_iso(expires + interval '60 days') || '"' ELSE 'null' END
    || ',"state":"' || state || '","subscription":{"autoRenewProductId":"' || arp || '","environment":"Sandbox","expiresAt":"'
    || pg_temp.sk_iso(expires) || '","gracePeriodExpiresAt":' || coalesce('"' || pg_temp.sk_iso(grace) || '"', 'null')
    || ',"isTrial":' || is_trial || ',"originalTransactionId":"' || otid || '","ownership":"PURCHASED","pendingProductId":'
    || coalesce('"' || NULLIF(arp, product) || '"', 'null') || ',"productId":"' || product || '","status":"' || sub_status
    || '","store":"app_store","willRenew":' || will_renew || '},"tier":"' || CASE WHEN entitled THEN tier ELSE 'free' END || '"}'
FROM (SELECT state IN ('subscribed', 'trial', 'grace_period') AS entitled) AS e
$$;
-- statement
-- Events of the last 30 days (STOREKEEPER_EVENT_RETENTION_DAYS; older ones are deleted hourly): what each applied
-- notification changed (SubscriptionChanges), the credits it granted (CreditChanges), the monthly windows of annual
-- periods (credit-reset jobs), consumables the app posted, and spends that used a meter up.
CREATE TEMP TABLE scale_event ON COMMIT DROP AS
WITH recent AS MATERIALIZED (
    SELECT t.*, t.first_product AS pa, t.cat AS category
    FROM scale_note t
    WHERE t.applied >= (SELECT date_trunc('milliseconds', now) - interval '30 days' FROM scale_parameters)
), change AS MATERIALIZED (
    -- a new period: started, renewed, an upgrade, a downgrade taking effect, a recovery
    SELECT r.*, x.type, x.type_key || ':' || r.otid || ':' || r.woli || ':' || r.acct AS key,
        CASE WHEN x.type_key = 'plan_changed'
            THEN '{"direction":"' || CASE WHEN r.upgrade THEN 'upgrade' ELSE 'downgrade' END || '","effective":"now","expiresAt":"'
                || pg_temp.sk_iso(r."end") || '","fromProductId":"' || r.pa || '","store":"app_store","toProductId":"' || r.product || '"}'
            ELSE '{"expiresAt":"' || pg_temp.sk_iso(r."end") || '","productId":"' || r.product || '","store":"app_store"}' END AS change,
        CASE WHEN r.trial THEN 'trial' ELSE 'subscribed' END AS state, 'active' AS sub_status, NULL::timestamptz AS grace_doc
    FROM recent r CROSS JOIN LATERAL (SELECT
        CASE WHEN r.slot = 0 THEN 'started' WHEN r.upgrade OR (r.category = 6 AND r.seg = 'B' AND r.k = 0) THEN 'plan_changed'
            WHEN r.category = 14 AND r.seg = 'B' AND r.k = 0 THEN 'recovered' ELSE 'renewed' END AS type_key) AS k
    CROSS JOIN LATERAL (SELECT 'subscription.' || k.type_key AS type, k.type_key) AS x
    WHERE r.slot < 1000
    UNION ALL
    SELECT r.*, 'subscription.renewal_disabled',
        'renewal_disabled:' || r.otid || ':' || pg_temp.sk_ms(r.signed) || ':' || r.uuid || ':' || r.acct,
        '{"expiresAt":"' || pg_temp.sk_iso(r."end") || '","store":"app_store"}', CASE WHEN r.trial THEN 'trial' ELSE 'subscribed' END,
        'active', NULL
    FROM recent r WHERE r.ntype = 'DID_CHANGE_RENEWAL_STATUS'
    UNION ALL
    SELECT r.*, 'subscription.plan_changed', 'plan_scheduled:' || r.otid || ':' || r.woli || ':' || r.arp || ':' || r.acct,
        '{"direction":"downgrade","effective":"next_renewal","fromProductId":"' || r.product || '","store":"app_store","toProductId":"'
            || r.arp || '"}', 'subscribed', 'active', NULL
    FROM recent r WHERE r.ntype = 'DID_CHANGE_RENEWAL_PREF' AND r.slot > 1000
    UNION ALL
    SELECT r.*, 'subscription.expired', 'expired:' || r.otid || ':' || r.woli || ':' || r.acct,
        '{"expiresAt":"' || pg_temp.sk_iso(r."end") || '","reason":"EXPIRED_' || r.nsub || '","store":"app_store"}',
        'free_with_credits', 'expired', NULL
    FROM recent r WHERE r.ntype = 'EXPIRED'
    UNION ALL
    SELECT r.*, 'subscription.refunded', 'refunded:' || r.otid || ':' || r.woli || ':' || r.acct,
        '{"reason":"REFUND","store":"app_store","transactionId":"' || r.txid || '"}', 'free_with_credits', 'refunded', NULL
    FROM recent r WHERE r.ntype = 'REFUND'
    UNION ALL
    SELECT r.*, 'subscription.billing_issue', 'billing_issue:' || r.otid || ':' || r.woli || ':' || r.acct,
        '{"expiresAt":"' || pg_temp.sk_iso(r."end") || '","store":"app_store"}',
        CASE WHEN r.nsub = 'GRACE_PERIOD' THEN 'grace_period' ELSE 'billing_retry' END,
        CASE WHEN r.nsub = 'GRACE_PERIOD' THEN 'grace_period' ELSE 'billing_retry' END, r.grace
    FROM recent r WHERE r.ntype = 'DID_FAIL_TO_RENEW'
    UNION ALL
    SELECT r.*, 'subscription.grace_period_started', 'grace_period:' || r.otid || ':' || r.woli || ':' || r.acct,
        '{"expiresAt":"' || pg_temp.sk_iso(r.grace) || '","store":"app_store"}', 'grace_period', 'grace_period', r.grace
    FROM recent r WHERE r.nsub = 'GRACE_PERIOD'
), topups AS (
    SELECT n, meter, at, amount FROM scale_topup
)
SELECT c.n, c.acct, c.otid::text AS subscription, c.type, c.key, c.applied AS created_at, c.change,
    '{"eventId":"' || c.uuid || '","notificationType":"' || c.ntype || '","originalTransactionId":"' || c.otid || '","signedDate":"'
        || pg_temp.sk_iso(c.signed) || '"' || coalesce(',"subtype":"' || c.nsub || '"', '') || ',"transactionId":"' || c.txid || '"}' AS cause,
    pg_temp.sk_status(c.acct, c.otid, c.state, c.tier, c.product, c.arp, c."end", c.grace_doc, c.trial, c.ars = 1 AND c.sub_status <> 'expired'
            AND c.sub_status <> 'refunded', c.sub_status, c.ai, coalesce(tu.top_up, 0), c.exports, coalesce(c.grace_doc, c."end"),
        c.applied) AS status
FROM change c
LEFT JOIN LATERAL (SELECT sum(t.amount)::bigint AS top_up FROM topups t WHERE t.n = c.n AND t.meter = 'ai_requests' AND t.at <= c.applied) AS tu ON true
UNION ALL
-- credits.granted: each window grant (a new period's first window with its notification; a later monthly window of an
-- annual period by its credit-reset job) and each consumable posted
SELECT w.n, w.acct, w.otid::text, 'credits.granted', 'granted:grant:' || w.woli || ':w' || w.w || ':' || w.meter, w.granted_at,
    '{"amount":' || w.granted || ',"bucket":"' || w.bucket || '","meter":"' || w.meter || '"}',
    CASE WHEN w.w = 0 THEN '{"eventId":"' || t.uuid || '","notificationType":"' || t.ntype || '","originalTransactionId":"' || t.otid
            || '","signedDate":"' || pg_temp.sk_iso(t.signed) || '"' || coalesce(',"subtype":"' || t.nsub || '"', '')
            || ',"transactionId":"' || t.txid || '"}'
        ELSE '{"originalTransactionId":"' || w.otid || '"}' END,
    pg_temp.sk_status(w.acct, w.otid, CASE WHEN w.trial THEN 'trial' ELSE 'subscribed' END, w.tier, w.product, w.product, w."end", NULL,
        w.trial, true, 'active', CASE WHEN w.meter = 'ai_requests' THEN w.granted ELSE w.ai END, 0,
        CASE WHEN w.meter = 'exports' THEN w.granted ELSE w.exports END, w.wend, w.granted_at)
FROM scale_window w
LEFT JOIN (SELECT * FROM scale_note
    WHERE slot < 1000 AND applied >= (SELECT date_trunc('milliseconds', now) - interval '31 days' FROM scale_parameters)) AS t
    ON t.n = w.n AND t.slot = w.i AND w.w = 0
WHERE w.granted > 0 AND w.granted_at >= w.now - interval '30 days'
UNION ALL
SELECT u.n, u.acct, NULL, 'credits.granted', 'granted:' || u.operation_key, u.at,
    '{"amount":' || u.amount || ',"bucket":"topup:' || u.acct || ':ai_requests","meter":"ai_requests"}',
    '{"notificationType":"CLIENT_TRANSACTION","transactionId":"' || substr(u.operation_key, 7) || '"}',
    pg_temp.sk_status(u.acct, s.otid, 'subscribed', p.tier, p.product, p.product, p."end", NULL, false, true, 'active',
        p.ai, u.amount, p.exports, p."end", u.at)
FROM scale_topup u
JOIN scale_subscriber s ON s.n = u.n
JOIN scale_period p ON p.n = u.n AND p.i = s.np - 1
WHERE u.out_key IS NULL AND u.at >= (SELECT date_trunc('milliseconds', now) - interval '30 days' FROM scale_parameters)
UNION ALL
-- credits.depleted: a spend that left nothing of its meter
SELECT x.n, x.acct, NULL, 'credits.depleted', 'depleted:spend:36:' || x.acct || ':' || x.idempotency_key, x.at,
    '{"meter":"' || x.meter || '"}', '{}',
    pg_temp.sk_status(x.acct, s.otid, CASE WHEN p.trial THEN 'trial' ELSE 'subscribed' END, p.tier, p.product, p.product, p."end", NULL,
        p.trial, true, 'active', CASE WHEN x.meter = 'ai_requests' THEN 0 ELSE p.ai END, 0,
        CASE WHEN x.meter = 'exports' THEN 0 ELSE p.exports END, p."end", x.at)
FROM (SELECT * FROM scale_spend
    WHERE remaining = 0 AND at >= (SELECT date_trunc('milliseconds', now) - interval '30 days' FROM scale_parameters)) AS x
JOIN scale_subscriber s ON s.n = x.n
JOIN scale_period p ON p.n = x.n AND p.i = s.np - 1;
-- statement
-- The events, in the order they were written (`sequence`), each body as EventData.json() writes it, stored as
-- events.body_deflated (a raw deflate stream of one stored block, compressed by PostgreSQL on the way: see the
-- notifications above).
ALTER TABLE events ALTER COLUMN body_deflated SET STORAGE EXTENDED, ALTER COLUMN body_deflated SET COMPRESSION lz4;
-- statement
-- The indexes of sql/0009 but its primary key (which webhook_deliveries and webhook_attempts reference), built again
-- after the insert.
ALTER TABLE events DROP CONSTRAINT events_sequence_key, DROP CONSTRAINT events_dedup_key_key;
-- statement
DROP INDEX events_feed, events_account, events_created;
-- statement
INSERT INTO events (id, dedup_key, type, account_id, subscription_id, environment, created_at, body_deflated)
SELECT md5('scale-event:' || key)::uuid, key, type, acct, subscription, 'Sandbox', created_at,
    substring(decode(repeat('000000ffff', 400), 'hex') FROM 1 FOR 5 * greatest(0, (1965 - len) / 5 + 1))
    || set_byte(set_byte(set_byte(set_byte('\x0100000000'::bytea, 1, len & 255), 2, len >> 8), 3, (~len) & 255), 4, ((~len) >> 8) & 255)
    || body
FROM (
    SELECT b.*, octet_length(body) AS len FROM (
        SELECT e.*, textsend('{"accountId":"' || acct || '","cause":' || cause || ',"change":' || change
            || ',"environment":"Sandbox","sandbox":true,"status":' || status || ',"subscriptionId":'
            || coalesce('"' || subscription || '"', 'null') || '}') AS body
        FROM (SELECT * FROM scale_event ORDER BY created_at) AS e
        OFFSET 0
    ) AS b
    OFFSET 0
) AS d;
-- statement
ALTER TABLE events ALTER COLUMN body_deflated SET STORAGE EXTERNAL, ALTER COLUMN body_deflated SET COMPRESSION DEFAULT;
-- statement
ALTER TABLE events ADD CONSTRAINT events_sequence_key UNIQUE (sequence), ADD CONSTRAINT events_dedup_key_key UNIQUE (dedup_key);
-- statement
CREATE INDEX events_feed ON events (transaction_id, sequence);
-- statement
CREATE INDEX events_account ON events (account_id, sequence);
-- statement
CREATE INDEX events_created ON events (created_at);
-- statement
SELECT CAST('load.sql: the schema is not as migrated after the load: ' || string_agg(kind || ' ' || name || ' on ' || on_table || ': '
    || definition, '; ') AS int)
FROM ((SELECT * FROM scale_schema EXCEPT SELECT * FROM scale_schema_now)
    UNION ALL (SELECT * FROM scale_schema_now EXCEPT SELECT * FROM scale_schema)) AS differences
HAVING count(*) > 0;
-- statement
-- The usage rollup's position (analytics-compact) where a server that kept up has it: past every loaded ledger row.
-- The load writes no analytics figures (`replay --all --write`, which the drills run after it, stores each
-- subscription's contribution; the credits' daily sums of the loaded year stay out of the usage chart). Without this,
-- `work` would roll a year of ledger up from id 0, 20 s of every minute until done, while the benchmark measures: work
-- a live install did as its ledger grew, not its steady state. That a backlog rolls up in bounded transactions, with
-- the figures of one at once, is AnalyticsDatasetTests' (usage); no benchmark times it at scale now.
INSERT INTO analytics_progress (name, position) SELECT 'credit_ledger', coalesce(max(id), 0) FROM credit_ledger
ON CONFLICT (name) DO UPDATE SET position = excluded.position;
-- statement
DROP FUNCTION pg_temp.sk_status(text, bigint, text, text, text, text, timestamptz, timestamptz, boolean, boolean, text, bigint, bigint,
    bigint, timestamptz, timestamptz), pg_temp.sk_addm(timestamptz, int), pg_temp.sk_d28(timestamptz), pg_temp.sk_ms(timestamptz),
    pg_temp.sk_iso(timestamptz), pg_temp.sk_at(timestamptz, interval, float8);
-- statement
DROP VIEW scale_note;
-- statement
DROP VIEW scale_schema_now;
-- statement
COMMIT;
-- statement
-- Statistics and the visibility map for the planner and index-only scans (autovacuum would get there later).
VACUUM (ANALYZE) subscriptions, notifications, signed_headers, subscription_archive, credit_buckets, credit_ledger, credit_bucket_balances,
    usage_requests, account_last_spends, events, jobs, job_history;
-- statement
-- The load's dirty pages written out, as a server that has run through a checkpoint since has them: with a large
-- shared_buffers and checkpoints far apart (--postgres-setting), gigabytes of them would otherwise still be in the
-- buffer pool, and the phases' first reads would each wait for a dirty buffer to be written before they could read.
CHECKPOINT;
