import Foundation
import PostgresNIO
import Testing

@testable import IntegrationSupport

/// Erasing a web customer touches that account's Stripe objects only: not those of another account that shares its
/// Stripe customer (one person, two accounts) or whose metadata holds the id (a referral: only that value becomes
/// the pseudonym), and not the metadata that names another subscription's holder.
@Suite("erasure of a web customer and other accounts' Stripe objects")
struct StripeErasureTests {
    @Test(
        "erasing an account leaves every other account's Stripe objects and events byte for byte — one sharing its Stripe customer, one whose metadata names it, one owned through its subscription's metadata alone, one whose session's metadata names it as holder under its own client_reference_id — and replay --all still finds every subscription's holder, the pseudonym's too"
    )
    func eraseLeavesOtherWebCustomers() async throws {
        try await StripeWorld.run(extra: ["STOREKEEPER_ADMIN_KEYS": AccountErasureTests.keys]) { world in
            let tag = UUID().uuidString.prefix(6).lowercased()
            let (a, b, c, d, e, f) = ("web-a-\(tag)", "web-b-\(tag)", "web-c-\(tag)", "web-d-\(tag)", "web-e-\(tag)", "web-f-\(tag)")
            let g = "web-g-\(tag)"
            func held(_ account: String) -> (String, String) { ("subscription_data[metadata][storekeeper_account_id]", account) }
            // Each opened as an app's backend opens it with Stripe; replay derives at the real time: bought a minute ago.
            let opened: [(account: String?, extra: [(String, String)])] = [
                (a, [("customer", "cus_shared_\(tag)"), ("metadata[storekeeper_account_id]", a), held(a)]),
                (b, [("customer", "cus_shared_\(tag)"), held(b)]),
                (c, [("metadata[referrer]", a), ("metadata[storekeeper_account_id]", c), held(c), ("subscription_data[metadata][referrer]", a)]),
                (nil, [("customer", "cus_two_\(tag)"), held(d)]),
                (e, [("customer", "cus_two_\(tag)")]),
                (nil, [held(f), ("metadata[referrer]", b)]),
                // g's own: its client_reference_id comes first, whatever its metadata says (docs/stripe.md).
                (g, [("metadata[storekeeper_account_id]", a), ("metadata[note]", "gee"), held(g)]),
            ]
            let now = Int64(Date().timeIntervalSince1970)
            for session in opened {
                let id = try world.fake.createSession(
                    priceId: "price_pro_monthly", mode: "subscription", account: session.account, extra: session.extra)
                _ = try world.fake.completeCheckout(id, at: now - 60)
            }
            // A one-time payment of a's too: its session, its charge.
            _ = try await world.buy("price_basic_lifetime", account: a, at: now - 50)
            for event in world.fake.events { #expect(try await world.deliver(event.body).status == .ok) }
            try await world.settle()
            for account in [a, b, c, d, e, f, g] {
                #expect(
                    try await world.harness.count("SELECT count(*) FROM subscriptions WHERE account_id = '\(account)' AND status = 'active'") == 1)
            }
            // The rows of the accounts to erase, found before their ids go: their subscriptions' objects and sessions.
            let erased = [a, e, f]
            let theirs = try await Self.strings(
                world,
                """
                WITH subscriptions AS (SELECT original_transaction_id AS id FROM subscriptions WHERE account_id = ANY($1)),
                sessions AS (SELECT id, body FROM stripe_objects WHERE object = 'checkout.session' AND body->>'client_reference_id' = ANY($1)),
                objects AS (
                    SELECT id FROM stripe_objects WHERE subscription_id IN (SELECT id FROM subscriptions)
                    UNION SELECT id FROM sessions
                    UNION SELECT id FROM stripe_objects WHERE object = 'charge'
                        AND body->>'payment_intent' IN (SELECT body->>'payment_intent' FROM sessions WHERE body->>'mode' = 'payment'))
                SELECT id FROM objects
                UNION SELECT 'event:' || id FROM stripe_events
                WHERE object_id IN (SELECT id FROM objects) OR subscription_id IN (SELECT id FROM subscriptions)
                """, erased)
            let before = try await Self.rows(world)
            var pseudonyms: [String: String] = [:]
            for account in erased {
                let answer = try await AccountErasureTests.requestErasure(of: account, client: world.http)
                #expect(answer.status == .ok, "\(String(buffer: answer.body))")
                pseudonyms[account] = try answer.answer(ErasureAnswer.self).pseudonym
            }
            let after = try await Self.rows(world)
            let scrubbed = Set(theirs.filter { before[$0] != after[$0] })
            #expect(scrubbed.contains { !$0.hasPrefix("event:") } && scrubbed.contains { $0.hasPrefix("event:") }, "\(scrubbed)")
            // Every other row as it was, but for a value equal to an erased id (c's session's referrer): the pseudonym.
            for (id, body) in before where !theirs.contains(id) {
                let expected = pseudonyms.reduce(body) { $0.replacingOccurrences(of: "\"\($1.key)\"", with: "\"\($1.value)\"") }
                #expect(after[id] == expected, "\(id) changed: \(body) → \(after[id] ?? "gone")")
            }
            #expect(before.contains { !theirs.contains($0.key) && $0.value.contains("\"\(a)\"") }, "c's session names a as its referrer")
            for account in erased {
                let holding = try await AccountErasureTests.tablesHolding(account, harness: world.harness)
                #expect(Set(holding).isSubset(of: ["job_history"]), "\(account): \(holding)")
                // Events are bytes, which tablesHolding reads as hex: read as text.
                #expect(after.values.allSatisfy { !$0.contains("\"\(account)\"") }, "\(account) is still in a Stripe object or event")
            }
            #expect(
                try await world.harness.count(
                    "SELECT count(*) FROM stripe_events WHERE strpos(convert_from(body, 'UTF8'), 'customer_details') > 0 AND object_id = ANY(ARRAY['\(theirs.joined(separator: "','"))'])"
                ) == 0)
            // Every subscription is derived from its stored objects as it stands: the others' holders, and the
            // pseudonym of the one owned through its metadata alone — also once a later event made the worker read
            // f's subscription from Stripe again, whose metadata still names f (the server files it under the pseudonym).
            let fSubscription = try #require(
                world.fake.state.withLock { $0.subscriptions.values.first { $0.metadata["storekeeper_account_id"] == f }?.id })
            let delivered = world.fake.events.count
            try world.fake.cancel(fSubscription, at: Int64(Date().timeIntervalSince1970), atPeriodEnd: true)
            for event in world.fake.events.dropFirst(delivered) { #expect(try await world.deliver(event.body).status == .ok) }
            try await world.settle()
            let database = ["DATABASE_URL": world.harness.databaseURL.urlString]
            let keyed = database.merging(["STOREKEEPER_ERASURE_KEY": StorekeeperHarness.erasureKey]) { $1 }
            let (status, output) = try await TestProcess.run("storekeeper", ["replay", "--all"], environment: keyed)
            #expect(status == 0, "\(output)")
            #expect(output.components(separatedBy: "matches its stored facts").count - 1 == 7, "\(output)")
            // Without the key replay cannot tell the erased ids in those facts: it refuses, rather than give them back.
            let (unkeyed, refusal) = try await TestProcess.run("storekeeper", ["replay", "--all", "--write"], environment: database)
            #expect(unkeyed == 1 && refusal.contains("STOREKEEPER_ERASURE_KEY is not set and 3 account(s) were erased"), "\(refusal)")
            // Erased again: nothing is left to move, and the answer says so — but for f, whose id the read after the
            // erasure brought back into its subscription's metadata: that is scrubbed, then nothing is left.
            var repeated: [Bool] = []
            for account in [a, e, f, f] {
                repeated.append(
                    try await AccountErasureTests.requestErasure(of: account, client: world.http).answer(ErasureAnswer.self).alreadyErased)
            }
            #expect(repeated == [true, true, false, true])
            #expect(try await Self.rows(world).values.allSatisfy { !$0.contains("\"\(f)\"") }, "f's id, brought back by a read, is scrubbed")
        }
    }

    @Test(
        "erasing an account whose id is also a price's (helper-138) leaves the purchases of that price's buyers byte for byte — session, payment, events — and a later refund of one still takes its credits back; one named as a Stripe status keeps its own subscription's status and replay derives it as stored (helper-140); a UUID id the app sent in capitals is erased from the account's own session"
    )
    func erasingAPriceNamedAccount() async throws {
        try await StripeWorld.run(extra: ["STOREKEEPER_ADMIN_KEYS": AccountErasureTests.keys]) { world in
            let buyer = "buyer-\(UUID().uuidString.prefix(6).lowercased())"
            let now = Int64(Date().timeIntervalSince1970)
            let session = try await world.buy("price_credits_100", account: buyer, at: now - 60)
            // An account named as the price, and a UUID account whose session names it in capitals (an app's own).
            let priceNamed = "price_credits_100"
            _ = try await world.post("/v1/accounts/\(priceNamed)/usage", ["meter": "ai_requests", "amount": 1, "idempotencyKey": "k1"])
            // An account named as a Stripe status, with a subscription of its own: erased, its objects keep their status.
            let statusNamed = "active"
            _ = try await world.buy("price_pro_monthly", account: statusNamed, at: now - 55)
            let uuid = UUID()
            let capitals = try world.fake.createSession(
                priceId: "price_pro_monthly", mode: "subscription", account: uuid.uuidString,
                extra: [
                    ("metadata[storekeeper_account_id]", uuid.uuidString), ("subscription_data[metadata][storekeeper_account_id]", uuid.uuidString),
                ])
            _ = try world.fake.completeCheckout(capitals, at: now - 50)
            for event in world.fake.events { #expect(try await world.deliver(event.body).status == .ok) }
            try await world.settle()
            #expect(try await world.harness.count("SELECT count(*) FROM subscriptions WHERE account_id = '\(uuid.uuidString.lowercased())'") == 1)
            let before = try await Self.rows(world)
            for account in [priceNamed, statusNamed, uuid.uuidString.lowercased()] {
                let answer = try await AccountErasureTests.requestErasure(of: account, client: world.http)
                #expect(answer.status == .ok, "\(String(buffer: answer.body))")
            }
            let after = try await Self.rows(world)
            let buyers = before.filter { $0.value.contains(buyer) }
            #expect(buyers.count >= 2, "the buyer's session and events")
            for (id, body) in buyers { #expect(after[id] == body, "\(id) changed: \(body) → \(after[id] ?? "gone")") }
            #expect(
                after.values.allSatisfy { !$0.uppercased().contains(uuid.uuidString) },
                "the UUID account's id, in any case, is gone from Stripe's objects")
            // The status-named account's own subscription keeps Stripe's status, and every subscription derives as stored.
            #expect(
                try await world.harness.count(
                    "SELECT count(*) FROM stripe_objects WHERE object = 'subscription' AND body->>'status' = 'active' AND body->'metadata'->>'storekeeper_account_id' <> 'active'"
                ) == 2)
            let keyed = ["DATABASE_URL": world.harness.databaseURL.urlString, "STOREKEEPER_ERASURE_KEY": StorekeeperHarness.erasureKey]
            let (status, output) = try await TestProcess.run("storekeeper", ["replay", "--all"], environment: keyed)
            #expect(status == 0 && output.components(separatedBy: "matches its stored facts").count - 1 == 2, "\(output)")
            // The buyer's refund finds its purchase as before.
            let intent = try #require(session.paymentIntent)
            let delivered = world.fake.events.count
            try world.fake.refund(paymentIntent: intent, at: now - 10)
            for event in world.fake.events.dropFirst(delivered) { #expect(try await world.deliver(event.body).status == .ok) }
            try await world.settle()
            #expect(
                try await world.harness.count(
                    "SELECT count(*) FROM credit_ledger WHERE operation_key LIKE 'refund:\(intent):%' AND delta = -100") == 1)
        }
    }

    @Test(
        "stripe_object_scrubbed (sql/0065, sql/0073): the id becomes the pseudonym where it names the holder (client_reference_id, metadata.storekeeper_account_id), at any depth; Stripe's contact fields go and every metadata keeps only Storekeeper's two keys, however deep (an invoice's parent.subscription_details, its lines, a session's collected_information, a dispute's evidence, receipt and invoice links); amounts, ids, a status or a price equal to the id, and other strings stay"
    )
    func scrubbedAtAnyDepth() async throws {
        // Shaped as Stripe sends an invoice and a completed session (API 2025-03-31.basil), the app's keys in metadata.
        let invoice = """
            {"id": "in_1", "amount_paid": 999, "customer": "cus_1", "customer_email": "alice@example.com", "customer_name": "Alice",
             "customer_address": {"line1": "12 Rabbit Hole Lane"}, "metadata": {},
             "parent": {"subscription_details": {"subscription": "sub_1",
                 "metadata": {"storekeeper_account_id": "acct-a", "email": "alice@example.com", "referrer": "acct-b"}}},
             "lines": {"data": [{"amount": 999, "metadata": {"phone": "+15551234567", "storekeeper_product_id": "pro.monthly"}}]}}
            """
        let session = """
            {"id": "cs_1", "client_reference_id": "acct-a", "customer_details": {"email": "alice@example.com"},
             "collected_information": {"shipping_details": {"name": "Alice", "address": {"line1": "12 Rabbit Hole Lane"}}},
             "custom_fields": [{"key": "nickname", "text": {"value": "Ally"}}], "metadata": {"note": "acct-a", "storekeeper_account_id": "acct-a"},
             "payment_intent": "pi_1", "amount_total": 999, "list": ["acct-a", "acct-ab", "x"], "status": "acct-a",
             "line_items": {"data": [{"price": {"id": "acct-a"}, "metadata": {"storekeeper_product_id": "acct-a"}}]}}
            """
        let expectedInvoice = """
            {"id": "in_1", "amount_paid": 999, "customer": "cus_1", "metadata": {},
             "parent": {"subscription_details": {"subscription": "sub_1", "metadata": {"storekeeper_account_id": "pseudo"}}},
             "lines": {"data": [{"amount": 999, "metadata": {"storekeeper_product_id": "pro.monthly"}}]}}
            """
        let expectedSession = """
            {"id": "cs_1", "client_reference_id": "pseudo", "metadata": {"storekeeper_account_id": "pseudo"}, "payment_intent": "pi_1",
             "amount_total": 999, "list": ["acct-a", "acct-ab", "x"], "status": "acct-a",
             "line_items": {"data": [{"price": {"id": "acct-a"}, "metadata": {"storekeeper_product_id": "acct-a"}}]}}
            """
        let dispute = """
            {"id": "dp_1", "amount": 999, "charge": {"id": "ch_1", "receipt_url": "https://pay.stripe.com/receipts/x",
             "billing_details": {"name": "Alice"}}, "evidence": {"customer_email_address": "alice@example.com",
             "customer_purchase_ip": "203.0.113.7"}, "customer_tax_ids": [{"value": "DE123"}], "hosted_invoice_url": "https://x", "status": "won"}
            """
        let expectedDispute = #"{"id": "dp_1", "amount": 999, "charge": {"id": "ch_1"}, "status": "won"}"#
        try await TestDatabase.withMigratedClient(maximumConnections: 1) { client in
            for (document, expected) in [(invoice, expectedInvoice), (session, expectedSession), (dispute, expectedDispute)] {
                let equal = try await client.query(
                    "SELECT stripe_object_scrubbed(\(document)::jsonb, 'acct-a', 'pseudo') = \(expected)::jsonb, stripe_object_scrubbed(\(document)::jsonb, 'acct-a', 'pseudo')::text",
                    logger: TestDatabase.logger
                ).decode((Bool, String).self).reduce(into: [(Bool, String)]()) { $0.append($1) }
                #expect(equal.first?.0 == true, "\(equal.first?.1 ?? "no row")")
            }
        }
    }

    @Test(
        "sql/0073: another account's object mentions an id only in a metadata value that is not a product's, and only that value becomes the pseudonym — not a price's equal id, not the product key; account_named reads a UUID in any case, any other id exactly"
    )
    func mentionsAreMetadataValues() async throws {
        let session = """
            {"id": "cs_2", "client_reference_id": "bob", "line_items": {"data": [{"price": {"id": "price_x"}}]}, "description": "price_x",
             "metadata": {"storekeeper_account_id": "bob", "storekeeper_product_id": "price_x", "referrer": "price_x", "other": "price_xy"},
             "parent": {"subscription_details": {"metadata": {"referrer": "price_x", "storekeeper_product_id": "price_x"}}}}
            """
        let expected = """
            {"id": "cs_2", "client_reference_id": "bob", "line_items": {"data": [{"price": {"id": "price_x"}}]}, "description": "price_x",
             "metadata": {"storekeeper_account_id": "bob", "storekeeper_product_id": "price_x", "referrer": "pseudo", "other": "price_xy"},
             "parent": {"subscription_details": {"metadata": {"referrer": "pseudo", "storekeeper_product_id": "price_x"}}}}
            """
        let uuid = "bbbbbbbb-1111-2222-3333-444444444444"
        try await TestDatabase.withMigratedClient(maximumConnections: 1) { client in
            let checks: [PostgresQuery] = [
                "SELECT stripe_metadata_mention_replaced(\(session)::jsonb, 'price_x', 'pseudo') = \(expected)::jsonb",
                "SELECT NOT stripe_metadata_mentions('{\"storekeeper_product_id\": \"price_x\"}'::jsonb, 'price_x')",
                "SELECT stripe_metadata_mentions('{\"storekeeper_product_id\": \"p\", \"ref\": \"price_x\"}'::jsonb, 'price_x')",
                "SELECT NOT stripe_metadata_mentions('\"price_x\"'::jsonb, 'price_x') AND NOT stripe_metadata_mentions(NULL, 'price_x')",
                "SELECT account_named(upper(\(uuid)), \(uuid)) AND account_named(\(uuid), \(uuid))",
                "SELECT NOT account_named('PRICE_X', 'price_x') AND NOT account_named('price_x2', 'price_x') AND NOT account_named(\(uuid), 'x')",
                "SELECT stripe_object_scrubbed(jsonb_build_object('client_reference_id', upper(\(uuid))), \(uuid), 'pseudo') = '{\"client_reference_id\": \"pseudo\"}'",
            ]
            for check in checks {
                let holds = try await client.query(check, logger: TestDatabase.logger).decode(Bool.self).reduce(into: [Bool]()) { $0.append($1) }
                #expect(holds == [true], "\(check.sql)")
            }
        }
    }

    /// Every Stripe object's and event's body, by id (events as `event:<id>`), as JSON PostgreSQL writes it (an event's
    /// bytes are rewritten as JSON where they change).
    static func rows(_ world: StripeWorld) async throws -> [String: String] {
        var rows: [String: String] = [:]
        let query: PostgresQuery = """
            SELECT id, body::text FROM stripe_objects UNION ALL SELECT 'event:' || id, convert_from(body, 'UTF8')::jsonb::text FROM stripe_events
            """
        for try await (id, body) in try await world.harness.client.query(query, logger: TestDatabase.logger).decode((String, String).self) {
            rows[id] = body
        }
        return rows
    }

    static func strings(_ world: StripeWorld, _ sql: String, _ accounts: [String]) async throws -> [String] {
        var binds = PostgresBindings()
        binds.append(accounts)
        var values: [String] = []
        for try await value in try await world.harness.client.query(PostgresQuery(unsafeSQL: sql, binds: binds), logger: TestDatabase.logger)
            .decode(String.self)
        {
            values.append(value)
        }
        return values
    }
}
