import Credits
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import LocalSigning
import NIOCore
import StorekeeperRuntime
import StripeFake
import StripeStore
import Synchronization
import Testing

/// A Storekeeper whose worker reads a fake Stripe (``FakeStripe``, served on a local port) and whose clock the test
/// moves: what the Stripe scenarios and the end-to-end tests run in.
struct StripeWorld {
    /// 2026-01-01T00:00:00Z: day 0 of every scenario.
    static let epoch: Int64 = 1_767_225_600
    static let secret = "whsec_fake_storekeeper_secret"

    let fake: FakeStripe
    let harness: StorekeeperHarness
    let http: any TestClientProtocol
    let clock: MovableClock

    static func time(_ day: Double) -> Int64 { epoch + Int64(day * 86_400) }

    /// Runs `body` with a fake Stripe selling the default catalogue's Stripe prices and a Storekeeper reading it.
    static func run(extra: [String: String] = [:], _ body: @escaping @Sendable (StripeWorld) async throws -> Void) async throws {
        let catalogue = try TierCatalogue.load(path: TierCatalogue.defaultPath).get()
        let fake = FakeStripe(prices: FakeStripe.prices(of: catalogue), webhookSecret: secret)
        let clock = MovableClock(Date(timeIntervalSince1970: TimeInterval(epoch)))
        let clockReader: @Sendable () -> Date = { clock.now }
        try await Application(router: fake.router()).test(.live) { live in
            let environment = [
                "STOREKEEPER_STRIPE_WEBHOOK_SECRETS": secret, "STOREKEEPER_STRIPE_API_KEY": fake.apiKey,
                "STOREKEEPER_STRIPE_BASE_URL": "http://127.0.0.1:\(live.port!)", "STOREKEEPER_STRIPE_REQUESTS_PER_SECOND": "100000",
            ].merging(extra) { _, new in new }
            try await StorekeeperHarness.run(environment: environment, clock: clockReader) { harness in
                try await harness.withHTTP { http in
                    try await body(StripeWorld(fake: fake, harness: harness, http: http, clock: clock))
                }
            }
        }
    }

    func setClock(_ time: Int64) { clock.set(Date(timeIntervalSince1970: TimeInterval(time))) }

    /// Posts a Stripe event body, signed now by the world's clock, to `POST /stripe/webhooks`.
    func deliver(_ body: Data) async throws -> TestResponse {
        let now = Int64(clock.now.timeIntervalSince1970)
        var headers: HTTPFields = [.contentType: "application/json"]
        headers[HTTPField.Name("Stripe-Signature")!] = fake.signature(of: body, at: now)
        return try await http.execute(uri: "/stripe/webhooks", method: .post, headers: headers, body: ByteBuffer(data: body))
    }

    /// POSTs JSON to the service API with the test key.
    func post(_ uri: String, _ json: [String: Any]) async throws -> TestResponse {
        try await http.execute(
            uri: uri, method: .post, headers: [.authorization: "Bearer \(StorekeeperHarness.apiKey)", .contentType: "application/json"],
            body: ByteBuffer(data: try JSONSerialization.data(withJSONObject: json)))
    }

    /// Waits until every delivered event and notification is processed and none failed.
    func settle() async throws {
        try await eventually(timeout: .seconds(60), "Stripe events and notifications to be processed") {
            let waiting = try await harness.count("SELECT count(*) FROM jobs WHERE kind IN ('stripe-event', 'apply-notification')")
            let unprocessed = try await harness.count("SELECT count(*) FROM stripe_events WHERE processed_at IS NULL AND NOT ignored")
            return waiting == 0 && unprocessed == 0
        }
        #expect(try await harness.count("SELECT count(*) FROM jobs WHERE state = 'failed'") == 0, "no job failed")
    }

    /// A Checkout Session for `account` through Storekeeper's own endpoint, completed by the customer at `time`.
    func buy(_ price: String, account: String, at time: Int64, trialDays: Int? = nil) async throws -> StripeCheckoutSession {
        setClock(time)
        let response = try await post(
            "/v1/accounts/\(account)/stripe/checkout",
            ["productId": price, "successUrl": "https://app.example/done", "cancelUrl": "https://app.example/cancel"])
        #expect(response.status == .created, "checkout: \(String(buffer: response.body))")
        let sessionId = try response.answer(StripeSessionAnswer.self).sessionId
        return try fake.completeCheckout(sessionId, at: time, trialDays: trialDays)
    }
}

/// A clock the test sets.
final class MovableClock: Sendable {
    private let value: Mutex<Date>

    init(_ start: Date) { value = Mutex(start) }

    var now: Date { value.withLock { $0 } }
    func set(_ date: Date) { value.withLock { $0 = date } }
}

extension StripeWorld {
    /// The bytes of a Stripe event `id` of `type`, as its webhook delivers them.
    static func event(_ id: String, type: String = "customer.subscription.updated", livemode: Bool = false) -> [UInt8] {
        Array(
            #"{"id":"\#(id)","object":"event","api_version":"2025-03-31.basil","created":1790000000,"livemode":\#(livemode),"type":"\#(type)","data":{"object":{"id":"sub_123","object":"subscription","status":"active"}}}"#
                .utf8)
    }
}
