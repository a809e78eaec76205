import Foundation
import PostgresNIO
import Testing

@testable import IntegrationSupport

/// What a web customer leaves in Storekeeper's copy of Stripe's events. An endpoint set to send every type delivers
/// events Storekeeper does not read (`customer.updated`, `payment_method.attached`), and some events turn out to name
/// nothing of Storekeeper's; an erasure scrubs events by the objects Storekeeper keeps, so those must not keep what the
/// customer gave Stripe (sql/0070).
@Suite("Stripe events that hold nothing of Storekeeper's")
struct StripeEventEnvelopeTests {
    @Test(
        "an event of a type Storekeeper does not read, of the other livemode, or naming a charge Stripe does not know keeps only its envelope once processed; the events of the customer's subscription keep theirs; after the customer's erasure no Stripe event holds their email, name or account id"
    )
    func envelopes() async throws {
        try await StripeWorld.run(extra: ["STOREKEEPER_ADMIN_KEYS": AccountErasureTests.keys]) { world in
            let tag = UUID().uuidString.prefix(8).lowercased()
            let account = "web-\(tag)"
            let email = "alice-\(tag)@example.com"
            let now = Int64(Date().timeIntervalSince1970)
            _ = try await world.buy("price_pro_monthly", account: account, at: now - 60)
            for event in world.fake.events { #expect(try await world.deliver(event.body).status == .ok) }
            try await world.settle()
            let customer = try #require(
                try await Self.strings(world, "SELECT body->>'customer' FROM stripe_objects WHERE object = 'subscription'").first)
            // Shaped as Stripe sends them (API 2025-03-31.basil): what the customer gave Stripe, and the app's metadata.
            let person: [String: Any] = ["email": email, "name": "Alice \(tag)", "phone": "+15551234567"]
            let unread: [(id: String, type: String, livemode: Bool, object: [String: Any])] = [
                (
                    "evt_customer_\(tag)", "customer.updated", false,
                    person.merging(["id": customer, "object": "customer", "metadata": ["storekeeper_account_id": account]]) { $1 }
                ),
                (
                    "evt_method_\(tag)", "payment_method.attached", false,
                    ["id": "pm_\(tag)", "object": "payment_method", "customer": customer, "billing_details": person]
                ),
                (
                    "evt_live_\(tag)", "customer.subscription.updated", true,
                    ["id": "sub_live_\(tag)", "object": "subscription", "customer": customer, "metadata": ["storekeeper_account_id": account]]
                ),
                (
                    "evt_charge_\(tag)", "charge.refunded", false,
                    ["id": "ch_unknown_\(tag)", "object": "charge", "customer": customer, "billing_details": person, "receipt_email": email]
                ),
            ]
            for event in unread {
                let body: [String: Any] = [
                    "id": event.id, "object": "event", "api_version": "2025-03-31.basil", "created": now - 30, "livemode": event.livemode,
                    "type": event.type, "data": ["object": event.object],
                ]
                #expect(try await world.deliver(try JSONSerialization.data(withJSONObject: body)).status == .ok)
            }
            try await world.settle()
            let outcomes = try await Self.strings(
                world, "SELECT id || '=' || coalesce(outcome, 'ignored') FROM stripe_events WHERE id LIKE '%\(tag)' ORDER BY id")
            #expect(
                outcomes == [
                    "evt_charge_\(tag)=not_found", "evt_customer_\(tag)=acknowledged", "evt_live_\(tag)=ignored", "evt_method_\(tag)=acknowledged",
                ])
            for event in unread {
                let stored = try #require(
                    try await Self.strings(world, "SELECT convert_from(body, 'UTF8') FROM stripe_events WHERE id = '\(event.id)'").first)
                let json = try #require(try JSONSerialization.jsonObject(with: Data(stored.utf8)) as? [String: Any])
                #expect(json["id"] as? String == event.id && json["type"] as? String == event.type && json["livemode"] as? Bool == event.livemode)
                #expect((json["created"] as? NSNumber)?.int64Value == now - 30)
                let object = try #require((json["data"] as? [String: Any])?["object"] as? [String: Any])
                #expect(object.keys.sorted() == ["id", "object"] && object["id"] as? String == event.object["id"] as? String, "\(stored)")
                #expect(Set(json.keys) == ["id", "object", "type", "livemode", "created", "data", "storekeeper_envelope_only"], "\(stored)")
            }
            // The events Storekeeper read into its objects keep their body (the erasure scrubs them with their objects).
            #expect(
                try await world.harness.count(
                    "SELECT count(*) FROM stripe_events WHERE outcome = 'applied' AND strpos(convert_from(body, 'UTF8'), 'storekeeper_envelope_only') = 0"
                ) > 0)
            let answer = try await AccountErasureTests.requestErasure(of: account, client: world.http)
            #expect(answer.status == .ok, "\(String(buffer: answer.body))")
            for needle in [email, "Alice \(tag)", "\"\(account)\""] {
                #expect(
                    try await Self.strings(
                        world, "SELECT id FROM stripe_events WHERE strpos(convert_from(body, 'UTF8')::jsonb::text, $1) > 0", needle
                    ) == [], "\(needle) is still in a stored Stripe event")
            }
        }
    }

    static func strings(_ world: StripeWorld, _ sql: String, _ value: String? = nil) async throws -> [String] {
        var binds = PostgresBindings()
        if let value { binds.append(value) }
        var values: [String] = []
        for try await string in try await world.harness.client.query(PostgresQuery(unsafeSQL: sql, binds: binds), logger: TestDatabase.logger)
            .decode(String.self)
        {
            values.append(string)
        }
        return values
    }
}
