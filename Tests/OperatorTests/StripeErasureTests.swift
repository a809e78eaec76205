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
        "stripe_object_scrubbed (sql/0065): the id becomes the pseudonym at any depth, Stripe's contact fields go and every metadata keeps only Storekeeper's two keys, however deep (an invoice's parent.subscription_details, its lines, a session's collected_information, a dispute's evidence, receipt and invoice links); amounts, ids and other strings stay"
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
             "payment_intent": "pi_1", "amount_total": 999, "list": ["acct-a", "acct-ab", "x"]}
            """
        let expectedInvoice = """
            {"id": "in_1", "amount_paid": 999, "customer": "cus_1", "metadata": {},
             "parent": {"subscription_details": {"subscription": "sub_1", "metadata": {"storekeeper_account_id": "pseudo"}}},
             "lines": {"data": [{"amount": 999, "metadata": {"storekeeper_product_id": "pro.monthly"}}]}}
            """
        let expectedSession = """
            {"id": "cs_1", "client_reference_id": "pseudo", "metadata": {"storekeeper_account_id": "pseudo"}, "payment_intent": "pi_1",
             "amount_total": 999, "list": ["pseudo", "acct-ab", "x"]}
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
