import Foundation
import StripeStore
import Synchronization

/// An in-process Stripe written from Stripe's API reference, for tests, benchmarks and `storekeeper dev
/// --fake-stripe`: it keeps customers, subscriptions, invoices, charges, disputes and Checkout Sessions, serves them
/// over HTTP as Stripe does (``router()``: form bodies, `expand[]`, list pagination, the error envelope, 429 with
/// `Retry-After` on demand), and moves them as Stripe's billing would (``FakeStripe+Billing``), recording the events
/// each change sends — signed with the real algorithm — to deliver to a webhook endpoint in any order.
public final class FakeStripe: Sendable {
    /// The fake's objects. Lists keep insertion order; Stripe lists newest first.
    public struct State: Sendable {
        public var prices: [String: StripePrice] = [:]
        public var subscriptions: [String: StripeSubscription] = [:]
        public var invoices: [String: StripeInvoice] = [:]
        public var charges: [String: StripeCharge] = [:]
        public var disputes: [String: StripeDispute] = [:]
        public var sessions: [String: StripeCheckoutSession] = [:]
        /// What each session's `subscription_data[metadata]` copies onto the subscription it creates.
        public var subscriptionMetadata: [String: [String: String]] = [:]
        /// Every event sent, oldest first: the JSON body as Stripe posts it.
        public var events: [Event] = []
        /// Failures to answer the next requests with (status, `Retry-After` seconds), first first.
        public var failures: [(status: Int, retryAfter: Int?)] = []
        /// Every request served: `METHOD path?query`, and the `Stripe-Version` it pinned (empty: none).
        public var requests: [String] = []
        public var versions: [String] = []
        /// Idempotency keys seen, with the object they created.
        public var idempotent: [String: String] = [:]
        /// How many of ``events`` were delivered to the webhook endpoint (``deliver(to:httpClient:)``).
        public var delivered = 0
        var sequence = 0
    }

    /// An event as sent: its id, type and body.
    public struct Event: Sendable {
        public var id: String
        public var type: String
        public var body: Data
        public var created: Int64
    }

    /// The secret key requests must carry.
    public let apiKey: String
    /// The webhook signing secret events are signed with.
    public let webhookSecret: String
    /// Where Checkout and the billing portal are said to live.
    public let hostedURL: String
    public let state: Mutex<State>
    /// Six letters of this fake's own, in every id it makes.
    let tag = String((0..<6).map { _ in "abcdefghijklmnopqrstuvwxyz".randomElement()! })
    /// The time the control routes act at (`dev`: the dev clock).
    let clock: @Sendable () -> Date
    /// Where the control routes deliver the events their actions send (`dev`: its own `/stripe/webhooks`).
    public let webhookURL: String?

    /// The fake's key and webhook secret unless told otherwise (`dev --fake-stripe` uses them).
    public static let defaultAPIKey = "sk_test_fake"
    public static let defaultWebhookSecret = "whsec_fake_storekeeper_secret"

    public init(
        prices: [StripePrice], apiKey: String = defaultAPIKey, webhookSecret: String = defaultWebhookSecret,
        hostedURL: String = "https://checkout.fake-stripe.test", webhookURL: String? = nil, clock: @escaping @Sendable () -> Date = { Date() }
    ) {
        self.clock = clock
        self.webhookURL = webhookURL
        self.apiKey = apiKey
        self.webhookSecret = webhookSecret
        self.hostedURL = hostedURL
        var state = State()
        for price in prices { state.prices[price.id] = price }
        self.state = Mutex(state)
    }

    /// A new id with Stripe's prefix for the kind of object.
    /// Ids of this fake: Stripe's prefix, the fake's own tag (a restarted fake names nothing an earlier one did) and a
    /// sequence.
    func nextId(_ prefix: String, in state: inout State) -> String {
        state.sequence += 1
        return "\(prefix)_fake\(tag)\(String(format: "%08d", state.sequence))"
    }

    /// The events sent so far.
    public var events: [Event] { state.withLock { $0.events } }

    /// The `Stripe-Signature` header of an event body, signed at `timestamp`.
    public func signature(of body: Data, at timestamp: Int64) -> String {
        StripeSignature(secrets: [webhookSecret]).header(body: body, timestamp: timestamp)
    }

    /// Records an event about `object` (encoded as Stripe sends it) of `type`.
    func send(_ type: String, object: [String: Any], at created: Int64, in state: inout State) {
        let id = nextId("evt", in: &state)
        let event: [String: Any] = [
            "id": id, "object": "event", "api_version": "2025-03-31.basil", "created": created, "livemode": false, "type": type,
            "pending_webhooks": 1, "data": ["object": object], "request": ["id": NSNull(), "idempotency_key": NSNull()],
        ]
        let body = (try? JSONSerialization.data(withJSONObject: event, options: [.sortedKeys])) ?? Data()
        state.events.append(Event(id: id, type: type, body: body, created: created))
    }
}
