-- Retention Messaging (issue 54): every answer to Apple's Get Retention Message request. The request identifier is
-- the key, so a request seen before is refused (Apple's verifiers do not check replays); the dashboard counts each
-- rule's answers and how many of those customers stayed.
CREATE TABLE retention_decisions (
    request_identifier      uuid PRIMARY KEY,
    original_transaction_id text NOT NULL,
    account_id              text,                   -- NULL: the subscription was unknown or had no account
    environment             text NOT NULL,
    product_id              text NOT NULL,
    rule                    text NOT NULL,          -- the rule that answered, or `default`
    answer_kind             text CHECK (answer_kind IN ('message', 'alternate_product', 'promotional_offer')),
    answer                  jsonb,                  -- the body answered; NULL: an error, so Apple showed its default
    fallback_reason         text CHECK (fallback_reason IN ('no_rule', 'unknown_subscription', 'late', 'failed')),
    signed_date             bigint NOT NULL,
    decided_at              timestamptz NOT NULL
);
CREATE INDEX retention_decisions_decided ON retention_decisions (decided_at);
CREATE INDEX retention_decisions_account ON retention_decisions (account_id) WHERE account_id IS NOT NULL;
