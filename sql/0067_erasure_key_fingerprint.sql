-- The fingerprint of the STOREKEEPER_ERASURE_KEY erasures are filed under (HMAC-SHA256 of a fixed text under the key,
-- which does not give the key away). Erased ids are kept only as their HMAC under that key: a process started with
-- another key, or none, would not recognise them, and Apple's next renewal naming an erased id would be filed under the
-- id again. docs/configuration.md said "never change it"; now `serve`, `work` and `replay` check it at start
-- (ErasedAccounts.confirmKey). One row: the key is never rotated, and the first writer wins a race between two keys.
-- Written by the first erasure, or, where erasures were filed before this file, by the first process started with a key.
CREATE TABLE erasure_key_fingerprint (
    singleton    boolean PRIMARY KEY DEFAULT true CHECK (singleton),
    fingerprint  text NOT NULL,
    recorded_at  timestamptz NOT NULL
);
