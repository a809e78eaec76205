-- What an erasure leaves of a Stripe object that is the erased account's, or of the event that carried it: every
-- string value equal to the id replaced by the pseudonym (as jsonb_replace_string, sql/0031), Stripe's contact fields
-- removed and every `metadata` cut to the keys Storekeeper reads, at any depth. Until now only the top level was
-- scrubbed: an invoice carries its subscription's metadata (`parent.subscription_details.metadata`), its lines theirs,
-- and a session event `collected_information` and `custom_fields`, which kept the app's keys and the customer's
-- shipping address after an erasure. Also gone: a dispute's `evidence` (the customer's name, email, addresses and IP),
-- an invoice's `customer_tax_ids`, and the links to documents that show the customer (`hosted_invoice_url`,
-- `invoice_pdf`, a charge's `receipt_url`). The two kept keys are StripeSubscription's accountMetadataKey and
-- productMetadataKey.
CREATE FUNCTION stripe_object_scrubbed(document jsonb, account text, pseudonym text) RETURNS jsonb LANGUAGE plpgsql IMMUTABLE AS $$
BEGIN
    CASE jsonb_typeof(document)
    WHEN 'string' THEN
        RETURN CASE WHEN document #>> '{}' = account THEN to_jsonb(pseudonym) ELSE document END;
    WHEN 'object' THEN
        RETURN coalesce((
            SELECT jsonb_object_agg(e.key, CASE
                WHEN e.key = 'metadata' AND jsonb_typeof(e.value) = 'object' THEN coalesce((
                    SELECT jsonb_object_agg(m.key, stripe_object_scrubbed(m.value, account, pseudonym)) FROM jsonb_each(e.value) AS m
                    WHERE m.key IN ('storekeeper_account_id', 'storekeeper_product_id')), '{}'::jsonb)
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
