-- Erased accounts (issue 43, personal data): an erased account's rows now carry a pseudonym, a random UUID. What is
-- kept of the account itself is the SHA-256 of its id, so that a fact Apple signs later with the old id as its
-- appAccountToken (every renewal carries it) is filed under the pseudonym instead of bringing the id back. The audit
-- log records the erasure by the same digest (docs/operations.md, "Personal data").
CREATE TABLE erased_accounts (
    account_digest  text PRIMARY KEY,          -- hex SHA-256 of the erased account id
    pseudonym       text UNIQUE NOT NULL,
    erased_at       timestamptz NOT NULL,
    erased_by       text NOT NULL              -- the operator's name
);
