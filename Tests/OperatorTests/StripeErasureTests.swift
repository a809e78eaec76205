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
        "erasing an account leaves every other account's Stripe objects and events byte for byte — one sharing its Stripe customer, one whose metadata names it, one owned through its subscription's metadata alone — and replay --all still finds every subscription's holder, the pseudonym's too"
    )
    func eraseLeavesOtherWebCustomers() async throws {
        try await StripeWorld.run(extra: ["STOREKEEPER_ADMIN_KEYS": AccountErasureTests.keys]) { world in
            let tag = UUID().uuidString.prefix(6).lowercased()
            let (a, b, c, d, e, f) = ("web-a-\(tag)", "web-b-\(tag)", "web-c-\(tag)", "web-d-\(tag)", "web-e-\(tag)", "web-f-\(tag)")
            func held(_ account: String) -> (String, String) { ("subscription_data[metadata][storekeeper_account_id]", account) }
            // Each opened as an app's backend opens it with Stripe; replay derives at the real time: bought a minute ago.
            let opened: [(account: String?, extra: [(String, String)])] = [
                (a, [("customer", "cus_shared_\(tag)"), ("metadata[storekeeper_account_id]", a), held(a)]),
                (b, [("customer", "cus_shared_\(tag)"), held(b)]),
                (c, [("metadata[referrer]", a), ("metadata[storekeeper_account_id]", c), held(c)]),
                (nil, [("customer", "cus_two_\(tag)"), held(d)]),
                (e, [("customer", "cus_two_\(tag)")]),
                (nil, [held(f), ("metadata[referrer]", b)]),
            ]
            let now = Int64(Date().timeIntervalSince1970)
            for session in opened {
                let id = try world.fake.createSession(
                    priceId: "price_pro_monthly", mode: "subscription", account: session.account, extra: session.extra)
                _ = try world.fake.completeCheckout(id, at: now - 60)
            }
            for event in world.fake.events { #expect(try await world.deliver(event.body).status == .ok) }
            try await world.settle()
            for account in [a, b, c, d, e, f] {
                #expect(
                    try await world.harness.count("SELECT count(*) FROM subscriptions WHERE account_id = '\(account)' AND status = 'active'") == 1)
            }
            // The rows of the accounts to erase, found before their ids go: their subscriptions' objects and sessions.
            let erased = [a, e, f]
            let theirs = try await Self.strings(
                world,
                """
                SELECT id FROM stripe_objects WHERE subscription_id IN (SELECT original_transaction_id FROM subscriptions WHERE account_id = ANY($1))
                    OR (object = 'checkout.session' AND body->>'client_reference_id' = ANY($1))
                UNION SELECT 'event:' || id FROM stripe_events WHERE object_id IN (
                    SELECT id FROM stripe_objects WHERE subscription_id IN (SELECT original_transaction_id FROM subscriptions WHERE account_id = ANY($1)))
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
            }
            // Every subscription is derived from its stored objects as it stands: the others' holders, and the
            // pseudonym of the one owned through its metadata alone.
            let (status, output) = try await TestProcess.run(
                "storekeeper", ["replay", "--all"], environment: ["DATABASE_URL": world.harness.databaseURL.urlString])
            #expect(status == 0, "\(output)")
            #expect(output.components(separatedBy: "matches its stored facts").count - 1 == 6, "\(output)")
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
