-- An erasure rewrote other accounts' Stripe purchases when the erased id was also a price's (helper-138): a session or
-- subscription counted as mentioning the account when any metadata value equalled its id — `storekeeper_product_id`,
-- which Storekeeper itself writes, is the price's id — and then every string equal to the id, anywhere in that other
-- customer's object, invoices and events, became the pseudonym (the price's id too, so a later refund of the purchase
-- found no product and was never applied). Another account's object now mentions the id only in a metadata value that
-- is not a product's, and only such values change (stripe_metadata_mentions, stripe_metadata_mention_replaced).
--
-- A UUID id is one account in any case (AccountID keeps it lowercased), but the stores keep what the app sent: a Play
-- purchase's `obfuscatedExternalAccountId` or a Checkout Session's `client_reference_id` in capitals survived the
-- erasure of its account beside the pseudonym. account_named matches as AccountID does.
--
-- The account's own objects change only where they name it as their holder (stripe_object_scrubbed, below).
--
-- Online: functions only (stripe_object_scrubbed replaced in place).

-- Whether `value` names `account` as AccountID reads ids: the same text, or, for a UUID (kept lowercased), the same UUID
-- in any case. Inlined where it is used: with an id that is no UUID it is an equality an index can serve.
CREATE FUNCTION account_named(value text, account text) RETURNS boolean LANGUAGE sql IMMUTABLE AS $$
    SELECT value = account OR (account ~ '^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$' AND lower(value) = account)
$$;

-- Whether a Stripe object's metadata mentions the account: a value naming it under any key but the product's.
CREATE FUNCTION stripe_metadata_mentions(metadata jsonb, account text) RETURNS boolean LANGUAGE sql IMMUTABLE AS $$
    SELECT CASE WHEN jsonb_typeof(metadata) = 'object' THEN EXISTS (
        SELECT 1 FROM jsonb_each_text(metadata) AS m WHERE m.key <> 'storekeeper_product_id' AND account_named(m.value, account))
    ELSE false END
$$;

-- Another account's object (or event) that mentions the account: each metadata value naming it, at any depth, becomes
-- the pseudonym; nothing else changes — not a product's key, not a price's or any other field's equal string.
CREATE FUNCTION stripe_metadata_mention_replaced(document jsonb, account text, pseudonym text) RETURNS jsonb LANGUAGE plpgsql IMMUTABLE AS $$
BEGIN
    CASE jsonb_typeof(document)
    WHEN 'object' THEN
        RETURN coalesce((
            SELECT jsonb_object_agg(e.key, CASE
                WHEN e.key = 'metadata' AND jsonb_typeof(e.value) = 'object' THEN coalesce((
                    SELECT jsonb_object_agg(m.key, CASE
                        WHEN m.key <> 'storekeeper_product_id' AND jsonb_typeof(m.value) = 'string' AND account_named(m.value #>> '{}', account)
                        THEN to_jsonb(pseudonym) ELSE m.value END)
                    FROM jsonb_each(e.value) AS m), '{}'::jsonb)
                ELSE stripe_metadata_mention_replaced(e.value, account, pseudonym) END)
            FROM jsonb_each(document) AS e), '{}'::jsonb);
    WHEN 'array' THEN
        RETURN coalesce((SELECT jsonb_agg(stripe_metadata_mention_replaced(a.value, account, pseudonym) ORDER BY a.ordinality)
                         FROM jsonb_array_elements(document) WITH ORDINALITY AS a), '[]'::jsonb);
    ELSE
        RETURN document;
    END CASE;
END
$$;

-- The account's own objects: as sql/0065, but the id becomes the pseudonym only where Stripe's objects name their
-- holder — a `client_reference_id` and `metadata.storekeeper_account_id`, at any depth, a UUID in any case — not every
-- equal string: an account named `active`, `usd`, `paid` or as its own price, once erased, had its subscription's
-- status, currency, a session's payment status or its price's id (and `storekeeper_product_id`) made the pseudonym,
-- and `replay` then derived another state and its refunds found no product (helper-140). The app's other metadata keys
-- go, as before, whatever they hold.
CREATE OR REPLACE FUNCTION stripe_object_scrubbed(document jsonb, account text, pseudonym text) RETURNS jsonb LANGUAGE plpgsql IMMUTABLE AS $$
BEGIN
    CASE jsonb_typeof(document)
    WHEN 'object' THEN
        RETURN coalesce((
            SELECT jsonb_object_agg(e.key, CASE
                WHEN e.key = 'client_reference_id' AND jsonb_typeof(e.value) = 'string' AND account_named(e.value #>> '{}', account)
                    THEN to_jsonb(pseudonym)
                WHEN e.key = 'metadata' AND jsonb_typeof(e.value) = 'object' THEN coalesce((
                    SELECT jsonb_object_agg(m.key, CASE
                        WHEN m.key = 'storekeeper_account_id' AND jsonb_typeof(m.value) = 'string' AND account_named(m.value #>> '{}', account)
                        THEN to_jsonb(pseudonym) ELSE m.value END)
                    FROM jsonb_each(e.value) AS m WHERE m.key IN ('storekeeper_account_id', 'storekeeper_product_id')), '{}'::jsonb)
                ELSE stripe_object_scrubbed(e.value, account, pseudonym) END)
            FROM jsonb_each(document) AS e
            WHERE e.key <> ALL (ARRAY['customer_email', 'customer_name', 'customer_phone', 'customer_address', 'customer_shipping',
                'customer_details', 'billing_details', 'receipt_email', 'shipping', 'shipping_details', 'collected_information',
                'custom_fields', 'customer_tax_ids', 'evidence', 'hosted_invoice_url', 'invoice_pdf', 'receipt_url'])), '{}'::jsonb);
    WHEN 'array' THEN
        RETURN coalesce((SELECT jsonb_agg(stripe_object_scrubbed(a.value, account, pseudonym) ORDER BY a.ordinality)
                         FROM jsonb_array_elements(document) WITH ORDINALITY AS a), '[]'::jsonb);
    ELSE
        RETURN document;
    END CASE;
END
$$;
