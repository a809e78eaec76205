import Foundation
import Hummingbird
import HummingbirdTesting
import Logging
import StripeAPI
import StripeFake
import StripeStore
import Testing

@testable import IntegrationSupport

/// Storekeeper's Stripe client against the fake Stripe over real HTTP — and the fake itself against Stripe's official
/// Python library, so neither is checked only by the other.
@Suite("Stripe's API: our client, and the fake judged by Stripe's own library")
struct StripeClientTests {
    static let price = StripePrice(id: "price_pro_monthly", unitAmount: 999, currency: "usd", recurring: .init(interval: "month"))

    static func withFake(_ body: @escaping @Sendable (FakeStripe, String) async throws -> Void) async throws {
        let fake = FakeStripe(prices: [price, StripePrice(id: "price_credits", unitAmount: 199, currency: "usd", recurring: nil)])
        try await Application(router: fake.router()).test(.live) { live in try await body(fake, "http://127.0.0.1:\(live.port!)") }
    }

    static func client(_ url: String, key: String = FakeStripe.defaultAPIKey) -> StripeClient {
        StripeClient(
            apiKey: key, baseURL: url, retryDelays: [.milliseconds(10), .milliseconds(10), .milliseconds(10)], logger: Logger(label: "test"))
    }

    static func subscribe(_ fake: FakeStripe, account: String = "user-1") throws -> String {
        let session = try fake.createSession(priceId: price.id, mode: "subscription", account: account)
        return try #require(try fake.completeCheckout(session, at: 1_767_225_600).subscription)
    }

    @Test("reads carry the key and the pinned version; 429 waits for Retry-After and 5xx are retried; 404, 400 and 401 are not")
    func retries() async throws {
        try await Self.withFake { fake, url in
            let id = try Self.subscribe(fake)
            let client = Self.client(url)
            fake.state.withLock { $0.failures = [(429, 0), (503, nil)] }
            let subscription = try await client.subscription(id)
            #expect(subscription.status == .active && subscription.items.data.first?.price.id == "price_pro_monthly")
            #expect(fake.state.withLock { $0.requests.filter { $0.hasPrefix("GET /v1/subscriptions/") }.count } == 3)
            #expect(fake.state.withLock { Set($0.versions) } == [StripeClient.apiVersion])

            fake.state.withLock { $0.failures = [(500, nil), (500, nil), (500, nil), (500, nil)] }
            await #expect(throws: StripeAPIError.self) { try await client.subscription(id) }
            #expect(fake.state.withLock { $0.failures.isEmpty }, "three retries after the first attempt, then given up")

            let requestsBefore = fake.state.withLock { $0.requests.count }
            do {
                _ = try await client.subscription("sub_missing")
                Issue.record("a missing subscription was found")
            } catch let error as StripeAPIError {
                #expect(error.kind == .notFound && error.code == "resource_missing" && error.httpStatus == 404)
            }
            do {
                _ = try await Self.client(url, key: "sk_test_wrong").subscription(id)
                Issue.record("a wrong key was accepted")
            } catch let error as StripeAPIError {
                #expect(error.kind == .refused && error.httpStatus == 401)
            }
            #expect(fake.state.withLock { $0.requests.count } == requestsBefore + 2, "neither was retried")
        }
    }

    @Test("the rate limiter spaces requests evenly from the first, and a quiet spell does not bank a burst")
    func pacing() async {
        let limiter = StripeRateLimiter(requestsPerSecond: 20)
        let start = ContinuousClock.now + .seconds(1)
        var turns: [Duration] = []
        for _ in 0..<4 { turns.append(await limiter.reserve(at: start) - start) }
        #expect(turns == [.zero, .milliseconds(50), .milliseconds(100), .milliseconds(150)])
        let later = start + .seconds(10)
        #expect(await limiter.reserve(at: later) == later)
        #expect(await limiter.reserve(at: later) == later + .milliseconds(50))
    }

    @Test("lists page with starting_after until has_more is false; expand[] inlines payments; writes are idempotent")
    func listsAndWrites() async throws {
        try await Self.withFake { fake, url in
            let ids = try (0..<7).map { _ in try Self.subscribe(fake) }
            let client = Self.client(url)
            var seen: [String] = []
            var after: String?
            var pages = 0
            repeat {
                let page = try await client.subscriptions(startingAfter: after, createdSince: nil)
                pages += 1
                seen += page.data.map(\.id)
                after = page.hasMore ? page.data.last?.id : nil
            } while after != nil && pages < 10
            #expect(Set(seen) == Set(ids) && seen.count == 7)
            let invoices = try await client.invoices(ofSubscription: ids[0])
            #expect(invoices.count == 1 && invoices.first?.paymentIntents.count == 1, "payments expanded")
            #expect(try await client.invoiceIds(paidBy: invoices[0].paymentIntents[0]) == [invoices[0].id])

            var form = StripeForm([
                ("mode", "subscription"), ("line_items[0][price]", "price_pro_monthly"), ("success_url", "https://a.example/ok?x=1&y=ü"),
            ])
            form.append("client_reference_id", "user 2+3")
            let first = try await client.createCheckoutSession(form, idempotencyKey: "key-1")
            let again = try await client.createCheckoutSession(form, idempotencyKey: "key-1")
            #expect(first.id == again.id && first.clientReferenceId == "user 2+3", "form-encoded faithfully, created once")
            do {
                _ = try await client.createCheckoutSession(
                    StripeForm([("mode", "subscription"), ("line_items[0][price]", "price_nope")]), idempotencyKey: "key-2")
                Issue.record("an unknown price was accepted")
            } catch let error as StripeAPIError {
                #expect(error.kind == .refused && error.code == "resource_missing" && error.message.contains("No such price"))
            }
        }
    }

    @Test("Stripe's official Python library reads the fake like Stripe (objects, lists, errors) and accepts its signed events")
    func officialLibrary() async throws {
        guard let python = ProcessInfo.processInfo.environment["STOREKEEPER_TEST_STRIPE_PYTHON"] else {
            print("skipped: Stripe's Python library is not installed (scripts/test installs it from PyPI)")
            return
        }
        try await Self.withFake { fake, url in
            let id = try Self.subscribe(fake)
            try fake.renew(id)
            let event = try #require(fake.events.last)
            let header = fake.signature(of: event.body, at: Int64(Date().timeIntervalSince1970))
            let script = """
                import stripe, sys
                url, key, sub, payload, header, secret = sys.argv[1:7]
                stripe.api_key = key
                stripe.api_base = url
                s = stripe.Subscription.retrieve(sub)
                print(s.status, s["items"].data[0].price.id, s["items"].data[0].current_period_end > s["items"].data[0].current_period_start)
                print(sum(1 for _ in stripe.Invoice.list(subscription=sub, limit=1).auto_paging_iter()))
                try:
                    stripe.Subscription.retrieve("sub_missing")
                except stripe.InvalidRequestError as error:
                    print(error.http_status, error.code)
                event = stripe.Webhook.construct_event(payload, header, secret)
                print(event.type, event.data.object.id)
                """
            let process = Process()
            process.executableURL = URL(fileURLWithPath: python)
            process.arguments = ["-c", script, url, fake.apiKey, id, String(decoding: event.body, as: UTF8.self), header, fake.webhookSecret]
            let output = Pipe()
            process.standardOutput = output
            process.standardError = output
            try process.run()
            process.waitUntilExit()
            let lines = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self).split(separator: "\n").map(String.init)
            #expect(process.terminationStatus == 0, "\(lines)")
            #expect(lines.first == "active price_pro_monthly True", "\(lines)")
            #expect(lines.dropFirst().first == "2", "two invoices, paged one at a time: \(lines)")
            #expect(lines.dropFirst(2).first == "404 resource_missing", "\(lines)")
            #expect(event.type == "customer.subscription.updated")
            #expect(lines.dropFirst(3).first == "customer.subscription.updated \(id)", "\(lines)")
        }
    }
}
