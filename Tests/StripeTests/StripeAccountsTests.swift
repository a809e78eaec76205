import Foundation
import HTTPTypes
import HummingbirdTesting
import NIOCore
import StripeFake
import Testing

@testable import IntegrationSupport

/// The web app's Stripe routes as a stranger meets them: every malformed or impossible request gets its clear answer,
/// and the portal needs a customer.
@Suite("Stripe checkout, portal and link: answers to bad and good requests, on real PostgreSQL")
struct StripeAccountsTests {
    @Test(
        "checkout: 400 for a bad body, URL or product (an App Store one too), 401 without the key, 413 for a huge body; 201 with the account filled in"
    )
    func checkout() async throws {
        try await StripeWorld.run { world in
            let path = "/v1/accounts/user-7/stripe/checkout"
            let good: [String: Any] = [
                "productId": "price_pro_monthly", "successUrl": "https://app.example/ok", "cancelUrl": "https://app.example/no",
            ]
            let cases: [([String: Any], String)] = [
                ([:], "bad_request"),
                (good.merging(["productId": "pro.monthly"]) { _, new in new }, "unknown_product"),
                (good.merging(["productId": "price_nope"]) { _, new in new }, "unknown_product"),
                (good.merging(["successUrl": "javascript:alert(1)"]) { _, new in new }, "bad_request"),
                (good.merging(["cancelUrl": "https://" + String(repeating: "a", count: 3000)]) { _, new in new }, "bad_request"),
                (good.merging(["idempotencyKey": ""]) { _, new in new }, "bad_request"),
                (good.merging(["idempotencyKey": "k\n\u{1}"]) { _, new in new }, "bad_request"),
                (good.merging(["successUrl": "https://app.example/\r\nX: y"]) { _, new in new }, "bad_request"),
            ]
            for (body, code) in cases {
                let response = try await world.post(path, body)
                #expect(
                    try response.status == .badRequest && response.answer(ErrorAnswer.self).error == code, "\(body): \(String(buffer: response.body))"
                )
            }
            let unauthenticated = try await world.http.execute(
                uri: path, method: .post, headers: [.contentType: "application/json"], body: ByteBuffer(string: "{}"))
            #expect(unauthenticated.status == .unauthorized)
            let huge = try await world.http.execute(
                uri: path, method: .post, headers: [.authorization: "Bearer \(StorekeeperHarness.apiKey)", .contentType: "application/json"],
                body: ByteBuffer(string: "{\"productId\": \"" + String(repeating: "x", count: 64 * 1024) + "\"}"))
            #expect(huge.status == .contentTooLarge)

            let created = try await world.post(path, good.merging(["idempotencyKey": "order-1"]) { _, new in new })
            #expect(created.status == .created)
            let again = try await world.post(path, good.merging(["idempotencyKey": "order-1"]) { _, new in new })
            #expect(
                try again.answer(StripeSessionAnswer.self).sessionId == created.answer(StripeSessionAnswer.self).sessionId,
                "one session per idempotency key")
            let session = try #require(world.fake.state.withLock { $0.sessions[try created.answer(StripeSessionAnswer.self).sessionId] })
            #expect(session.clientReferenceId == "user-7" && session.mode == "subscription")
            #expect(world.fake.state.withLock { $0.requests.contains { $0.hasPrefix("POST /v1/checkout/sessions") } })

            // Stripe takes idempotency keys of 255 characters at most (the fake refuses longer, as Stripe does): a
            // 200-character key, and an account whose escaped id is long, still make one session per key.
            let long = good.merging(["idempotencyKey": String(repeating: "k", count: 200)]) { _, new in new }
            let short = good.merging(["idempotencyKey": "k"]) { _, new in new }
            // 40 characters of 3 UTF-8 bytes each, escaped to 360.
            let wide = "/v1/accounts/\(String(repeating: "%E4%B8%AD", count: 40))/stripe/checkout"
            for (path, body) in [(path, long), (wide, short)] {
                let first = try await world.post(path, body)
                #expect(first.status == .created, "\(path): \(first.status) \(String(buffer: first.body))")
                let retried = try await world.post(path, body)
                #expect(try retried.answer(StripeSessionAnswer.self).sessionId == first.answer(StripeSessionAnswer.self).sessionId)
            }
        }
    }

    @Test(
        "nobody pays twice: a second checkout of the group answers the open session; paid, the same tier is refused and a higher one is the portal's; keys of two accounts never meet; a session Stripe forgot is replaced"
    )
    func payingTwice() async throws {
        try await StripeWorld.run { world in
            let account = UUID().uuidString.lowercased()
            let good: [String: Any] = [
                "productId": "price_pro_monthly", "successUrl": "https://app.example/ok", "cancelUrl": "https://app.example/no",
            ]
            let first = try await world.post("/v1/accounts/\(account)/stripe/checkout", good)
            let second = try await world.post(
                "/v1/accounts/\(account)/stripe/checkout", good.merging(["productId": "price_max_monthly"]) { _, new in new })
            #expect(
                try first.status == .created && second.answer(StripeSessionAnswer.self).sessionId == first.answer(StripeSessionAnswer.self).sessionId,
                "one open session per group")
            let sessions = world.fake.state.withLock { $0.sessions.count }
            #expect(sessions == 1)
            let sessionId = try first.answer(StripeSessionAnswer.self).sessionId
            _ = try world.fake.completeCheckout(sessionId, at: StripeWorld.time(0))
            for event in world.fake.events { _ = try await world.deliver(event.body) }
            try await world.settle()
            let same = try await world.post("/v1/accounts/\(account)/stripe/checkout", good)
            #expect(try same.status == .conflict && same.answer(ErrorAnswer.self).error == "already_entitled")
            let higher = try await world.post(
                "/v1/accounts/\(account)/stripe/checkout", good.merging(["productId": "price_max_monthly"]) { _, new in new })
            #expect(try higher.status == .conflict && higher.answer(ErrorAnswer.self).error == "change_in_portal", "\(String(buffer: higher.body))")
            // Top-ups can be bought any number of times.
            let credits = try await world.post(
                "/v1/accounts/\(account)/stripe/checkout", good.merging(["productId": "price_credits_100"]) { _, new in new })
            #expect(credits.status == .created)

            // A one-time session is not a subscription's: a subscription checkout never answers it.
            let other = UUID().uuidString.lowercased()
            let subscribing = try await world.post("/v1/accounts/\(other)/stripe/checkout", good)
            let lifetime = try await world.post(
                "/v1/accounts/\(other)/stripe/checkout", good.merging(["productId": "price_basic_lifetime"]) { _, new in new })
            #expect(
                try lifetime.status == .created
                    && lifetime.answer(StripeSessionAnswer.self).sessionId != subscribing.answer(StripeSessionAnswer.self).sessionId)
            let again = try await world.post(
                "/v1/accounts/\(other)/stripe/checkout", good.merging(["productId": "price_max_monthly"]) { _, new in new })
            #expect(try again.answer(StripeSessionAnswer.self).sessionId == subscribing.answer(StripeSessionAnswer.self).sessionId)
            // Paid, its events not delivered yet (or lost): Stripe is asked, and the account is not sold it twice.
            _ = try world.fake.completeCheckout(try subscribing.answer(StripeSessionAnswer.self).sessionId, at: StripeWorld.time(0))
            let stale = try await world.post("/v1/accounts/\(other)/stripe/checkout", good)
            #expect(
                try stale.status == .conflict && stale.answer(ErrorAnswer.self).error == "already_entitled",
                "\(stale.status) \(String(buffer: stale.body))")

            // A stored open session Stripe no longer knows (its objects reset, another key's): forgotten, a new one made.
            let third = UUID().uuidString.lowercased()
            let forgotten = try await world.post("/v1/accounts/\(third)/stripe/checkout", good)
            let forgottenId = try forgotten.answer(StripeSessionAnswer.self).sessionId
            world.fake.state.withLock { $0.sessions[forgottenId] = nil }
            let fresh = try await world.post("/v1/accounts/\(third)/stripe/checkout", good)
            #expect(
                try fresh.status == .created && fresh.answer(StripeSessionAnswer.self).sessionId != forgottenId,
                "\(fresh.status) \(String(buffer: fresh.body))")
            let kept = try await world.post("/v1/accounts/\(third)/stripe/checkout", good)
            #expect(try kept.answer(StripeSessionAnswer.self).sessionId == fresh.answer(StripeSessionAnswer.self).sessionId)

            let metrics = String(buffer: try await world.http.execute(uri: "/metrics", method: .get).body)
            #expect(metrics.contains("storekeeper_stripe_api_calls_total") && metrics.contains("create_checkout_session"), "API calls counted")
            #expect(metrics.contains("storekeeper_stripe_intake_events_total"), "intake answers counted")

            let a = try await world.post("/v1/accounts/victim:y/stripe/checkout", good.merging(["idempotencyKey": "z"]) { _, new in new })
            let b = try await world.post("/v1/accounts/victim/stripe/checkout", good.merging(["idempotencyKey": "y:z"]) { _, new in new })
            #expect(
                try a.status == .created && b.status == .created
                    && a.answer(StripeSessionAnswer.self).sessionId != b.answer(StripeSessionAnswer.self).sessionId)
        }
    }

    @Test(
        "portal: 404 no_customer before a web purchase, a portal URL after; the dashboard links the source to Stripe's; link: 400 for a malformed id, 404 for one Stripe does not know"
    )
    func portalAndLink() async throws {
        try await StripeWorld.run(extra: ["STOREKEEPER_ADMIN_KEYS": "admin-key-for-stripe-tests"]) { world in
            let account = UUID().uuidString.lowercased()
            let before = try await world.post("/v1/accounts/\(account)/stripe/portal", ["returnUrl": "https://app.example/account"])
            #expect(try before.status == .notFound && before.answer(ErrorAnswer.self).error == "no_customer")
            _ = try await world.buy("price_pro_monthly", account: account, at: StripeWorld.time(0))
            for event in world.fake.events { _ = try await world.deliver(event.body) }
            try await world.settle()
            let portal = try await world.post("/v1/accounts/\(account)/stripe/portal", ["returnUrl": "https://app.example/account"])
            #expect(
                try portal.status == .ok && portal.answer(StripePortalAnswer.self).url.hasPrefix(world.fake.hostedURL) == true,
                "\(String(buffer: portal.body))")
            #expect(try await world.post("/v1/accounts/\(account)/stripe/portal", ["returnUrl": "ftp://x"]).status == .badRequest)
            let basic = "Basic " + Data("admin:admin-key-for-stripe-tests".utf8).base64EncodedString()
            let page = String(
                buffer: try await world.http.execute(uri: "/admin?account=\(account)", method: .get, headers: [.authorization: basic]).body)
            let subscription = try #require(world.fake.state.withLock { $0.subscriptions.keys.first })
            #expect(page.contains("href=\"https://dashboard.stripe.com/test/subscriptions/\(subscription)\""), "the dashboard links to Stripe's")
            #expect(page.contains("customer.subscription.created") && page.contains("invoice.paid"), "its history lists the Stripe events")

            for id in ["cus_123", "sub_", "sub_with space", String(repeating: "sub_x", count: 100)] {
                let response = try await world.post("/v1/accounts/\(account)/stripe/link", ["subscriptionId": id])
                #expect(response.status == .badRequest, "\(id.prefix(20))")
            }
            let unknown = try await world.post("/v1/accounts/\(account)/stripe/link", ["subscriptionId": "sub_unknown1"])
            #expect(unknown.status == .notFound, "\(String(buffer: unknown.body))")
            #expect(try await world.harness.count("SELECT count(*) FROM stripe_links") == 0, "nothing stored for it")
            // Another account's subscription: its checkout names its owner first, so a link would not hold.
            let taken = try await world.post("/v1/accounts/someone-else/stripe/link", ["subscriptionId": subscription])
            #expect(try taken.status == .conflict && taken.answer(ErrorAnswer.self).error == "linked_elsewhere", "\(String(buffer: taken.body))")
            #expect(try await world.harness.count("SELECT count(*) FROM stripe_links") == 0, "the refused link is not kept")
            #expect(try await world.http.getWithKey("/v1/accounts/\(account)/status").answer(StatusAnswer.self).entitled == true)
        }
    }
    @Test(
        "link: a subscription another account holds is 409 whatever made it, and neither account changes; linking it again to its holder is harmless")
    func linkHeldElsewhere() async throws {
        try await StripeWorld.run { world in
            let (holder, other) = ("la-\(UUID().uuidString.prefix(6))", "lb-\(UUID().uuidString.prefix(6))")
            // Made by the app through Stripe's API, outside Storekeeper's checkout: no session or metadata names anyone.
            let subscription = try world.fake.subscribeOutsideCheckout("price_pro_monthly", at: StripeWorld.time(0))
            for event in world.fake.events { _ = try await world.deliver(event.body) }
            try await world.settle()
            let linked = try await world.post("/v1/accounts/\(holder)/stripe/link", ["subscriptionId": subscription])
            #expect(linked.status == .ok, "\(String(buffer: linked.body))")
            #expect(try await world.http.getWithKey("/v1/accounts/\(holder)/status").answer(StatusAnswer.self).tier == "pro")
            let taken = try await world.post("/v1/accounts/\(other)/stripe/link", ["subscriptionId": subscription])
            #expect(try taken.status == .conflict && taken.answer(ErrorAnswer.self).error == "linked_elsewhere", "\(String(buffer: taken.body))")
            #expect(try await world.http.getWithKey("/v1/accounts/\(holder)/status").answer(StatusAnswer.self).tier == "pro", "the holder keeps it")
            #expect(try await world.http.getWithKey("/v1/accounts/\(other)/status").answer(StatusAnswer.self).tier == "free")
            #expect(try await world.harness.count("SELECT count(*) FROM stripe_links WHERE account_id = '\(holder)'") == 1)
            let again = try await world.post("/v1/accounts/\(holder)/stripe/link", ["subscriptionId": subscription])
            #expect(again.status == .ok, "\(String(buffer: again.body))")
        }
    }

    @Test(
        "someone else's checkout naming the account only in metadata (a gift, or an attacker) does not make their Stripe customer the account's: no portal over it, the account's own checkout is not prefilled with it, and its own customer is the portal's afterwards"
    )
    func giftedSubscriptionKeepsItsCustomer() async throws {
        try await StripeWorld.run { world in
            let victim = "gifted-\(UUID().uuidString.prefix(8).lowercased())"
            let session = try world.fake.createSession(
                priceId: "price_pro_monthly", mode: "subscription", account: nil,
                extra: [("subscription_data[metadata][storekeeper_account_id]", victim)])
            let paid = try world.fake.completeCheckout(session, at: StripeWorld.time(0))
            let buyer = try #require(paid.customer)
            for event in world.fake.events { _ = try await world.deliver(event.body) }
            try await world.settle()
            #expect(
                try await world.http.getWithKey("/v1/accounts/\(victim)/status").answer(StatusAnswer.self).tier == "pro", "the gift is the account's")
            let portal = try await world.post("/v1/accounts/\(victim)/stripe/portal", ["returnUrl": "https://app.example/account"])
            #expect(try portal.status == .notFound && portal.answer(ErrorAnswer.self).error == "no_customer", "\(String(buffer: portal.body))")
            // Also before the gift's session is stored (its own event comes later, or never after `stripe sync`).
            #expect(
                try await world.harness.count(
                    "WITH gone AS (DELETE FROM stripe_objects WHERE object = 'checkout.session' AND id = '\(session)' RETURNING 1) SELECT count(*) FROM gone"
                ) == 1)
            let unsessioned = try await world.post("/v1/accounts/\(victim)/stripe/portal", ["returnUrl": "https://app.example/account"])
            #expect(
                try unsessioned.status == .notFound && unsessioned.answer(ErrorAnswer.self).error == "no_customer",
                "\(String(buffer: unsessioned.body))")

            let subscription = try #require(paid.subscription)
            try world.fake.cancel(subscription, at: StripeWorld.time(1), atPeriodEnd: false)
            for event in world.fake.events.dropFirst(world.fake.state.withLock { $0.delivered }) { _ = try await world.deliver(event.body) }
            try await world.settle()
            let own = try await world.buy("price_pro_monthly", account: victim, at: StripeWorld.time(2))
            #expect(own.customer != buyer, "the account's own checkout is not the buyer's customer")
            for event in world.fake.events { _ = try await world.deliver(event.body) }
            try await world.settle()
            let ownPortal = try await world.post("/v1/accounts/\(victim)/stripe/portal", ["returnUrl": "https://app.example/account"])
            #expect(ownPortal.status == .ok, "\(String(buffer: ownPortal.body))")
            let portals = world.fake.state.withLock { $0.requests.filter { $0.hasPrefix("POST /v1/billing_portal/sessions") } }
            #expect(portals.count == 1, "\(portals)")
        }
    }
}
