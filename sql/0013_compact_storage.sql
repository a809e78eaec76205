-- Signed payloads kept as their parts (see SignedParts in Sources/SignedData): a notification's JWS and the JWS nested
-- in it share the same header — `alg` and three certificates, 70 % of the bytes — so each distinct header is stored
-- once, by the SHA-256 of its text, and a notification keeps its payloads as JSON bytes and its 64-byte signatures.
-- `storekeeper verify --stored UUID` joins them back byte for byte and verifies them again.
CREATE TABLE signed_headers (
    digest  bytea PRIMARY KEY,      -- SHA-256 of the header segment
    segment text NOT NULL           -- the base64url header segment as received
);

-- signed_parts: the encoded parts, compressed by Storekeeper (JSON compresses; base64 did not). Its payloads are the JSON Apple
-- signed, so a row stored as parts needs no `decoded` copy of them (StoredNotificationFacts reads either).
-- signed_payload stays for rows stored before this version and for the rare payload whose parts would not join back
-- exactly; those, and rows rejected for their content (found by `decoded` in an index), keep `decoded`. After the
-- retention period (STOREKEEPER_SIGNED_RETENTION_DAYS) the signed data is cleared and `decoded` written from the parts:
-- the verified facts stay for replay.
ALTER TABLE notifications
    ALTER COLUMN signed_payload DROP NOT NULL,
    ALTER COLUMN decoded DROP NOT NULL,
    ADD COLUMN signed_parts bytea,
    ADD CONSTRAINT notifications_facts_kept CHECK (decoded IS NOT NULL OR signed_parts IS NOT NULL);

-- An event's body (its change and the account's status, 1–2 KB of JSON) is stored as its text, compressed by
-- Storekeeper like the signed parts: PostgreSQL compresses only rows above about 2 KB. Events stored before keep
-- their jsonb body.
ALTER TABLE events
    ALTER COLUMN body DROP NOT NULL,
    ADD COLUMN body_deflated bytea,
    ADD CONSTRAINT events_body_kept CHECK (body IS NOT NULL OR body_deflated IS NOT NULL);
-- Both are compressed already: PostgreSQL need not try again.
ALTER TABLE notifications ALTER COLUMN signed_parts SET STORAGE EXTERNAL;
ALTER TABLE events ALTER COLUMN body_deflated SET STORAGE EXTERNAL;
