import Credits
import Foundation
import GooglePlayFake
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import NIOCore
import StripeFake
import Synchronization
import Testing

/// A Storekeeper taking Play pushes and reading Play through ``FakeGooglePlay`` served on a local port: certificates,
/// the token endpoint and the Play Developer API all from the fake, with its service-account key file on disk.
struct GooglePlayWorld: Sendable {
    static let package = "com.example.storekeeper"
    static let audience = "https://storekeeper.example.com/notifications/google"
    static let account = "play-push@storekeeper-demo.iam.gserviceaccount.com"

    let fake: FakeGooglePlay
    let harness: StorekeeperHarness
    let http: any TestClientProtocol
    /// The fake's base URL.
    let base: String
    /// Storekeeper's clock (the wall clock's now when the world starts), moved by tests that let time pass.
    let clock: ShiftedClock
    /// A fake Stripe beside the fake Play (`stripe: true`): one account can hold all three stores.
    var stripe: FakeStripe?

    static func run(
        worker: Bool = true, readsPlay: Bool = true, stripe: Bool = false, extra: [String: String] = [:],
        _ body: @escaping @Sendable (GooglePlayWorld) async throws -> Void
    ) async throws {
        guard stripe else { return try await run(worker: worker, readsPlay: readsPlay, stripe: nil, extra: extra, body) }
        let catalogue = try TierCatalogue.load(path: TierCatalogue.defaultPath).get()
        let fakeStripe = FakeStripe(prices: FakeStripe.prices(of: catalogue), webhookSecret: StripeWorld.secret)
        try await Application(router: fakeStripe.router()).test(.live) { live in
            let environment = [
                "STOREKEEPER_STRIPE_WEBHOOK_SECRETS": StripeWorld.secret, "STOREKEEPER_STRIPE_API_KEY": fakeStripe.apiKey,
                "STOREKEEPER_STRIPE_BASE_URL": "http://127.0.0.1:\(live.port!)", "STOREKEEPER_STRIPE_REQUESTS_PER_SECOND": "100000",
            ].merging(extra) { _, new in new }
            try await run(worker: worker, readsPlay: readsPlay, stripe: fakeStripe, extra: environment, body)
        }
    }

    private static func run(
        worker: Bool, readsPlay: Bool, stripe: FakeStripe?, extra: [String: String],
        _ body: @escaping @Sendable (GooglePlayWorld) async throws -> Void
    ) async throws {
        let clock = ShiftedClock()
        let fake = try FakeGooglePlay(packageName: package)
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("storekeeper-play-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        try await Application(router: fake.router()).test(.live) { live in
            let base = "http://127.0.0.1:\(live.port!)"
            var environment = [
                "STOREKEEPER_GOOGLE_PACKAGE_NAME": package, "STOREKEEPER_GOOGLE_PUSH_AUDIENCE": audience,
                "STOREKEEPER_GOOGLE_PUSH_SERVICE_ACCOUNT": account, "STOREKEEPER_GOOGLE_CERTS_URL": base + "/oauth2/v3/certs",
            ]
            if readsPlay {
                let keyFile = directory.appendingPathComponent("service-account.json")
                try Data(fake.serviceAccountKeyFile(tokenURI: base + "/token")).write(to: keyFile)
                environment["STOREKEEPER_GOOGLE_SERVICE_ACCOUNT"] = keyFile.path
                environment["STOREKEEPER_GOOGLE_PLAY_API_URL"] = base
                environment["STOREKEEPER_GOOGLE_REQUESTS_PER_MINUTE"] = "1000000"
            }
            environment.merge(extra) { _, new in new }
            try await StorekeeperHarness.run(worker: worker, environment: environment, clock: { clock.now }) { harness in
                try await harness.withHTTP { http in
                    try await body(GooglePlayWorld(fake: fake, harness: harness, http: http, base: base, clock: clock, stripe: stripe))
                }
            }
        }
    }

    /// Pushes `notification` as Pub/Sub would, signed now; the answer.
    @discardableResult
    func push(_ notification: [String: Any], messageId: String? = nil) async throws -> TestResponse {
        try await push(body: fake.pushBody(notification, messageId: messageId).body)
    }

    func push(body: [UInt8], token: String? = nil) async throws -> TestResponse {
        let token = try token ?? fake.pushToken(.init(audience: Self.audience, email: Self.account))
        return try await http.execute(
            uri: "/notifications/google", method: .post, headers: [.contentType: "application/json", .authorization: "Bearer \(token)"],
            body: ByteBuffer(bytes: body))
    }

    /// A Stripe Checkout of `price` for `account` through Storekeeper's endpoint, completed at `date`; its events are
    /// signed and posted as Stripe would.
    func stripeBuy(_ price: String, account: String, at date: Date) async throws -> [Data] {
        let stripe = try #require(stripe, "the world runs a fake Stripe")
        let before = stripe.events.count
        let response = try await http.execute(
            uri: "/v1/accounts/\(account)/stripe/checkout", method: .post,
            headers: [.authorization: "Bearer \(StorekeeperHarness.apiKey)", .contentType: "application/json"],
            body: ByteBuffer(
                data: try JSONSerialization.data(withJSONObject: [
                    "productId": price, "successUrl": "https://app.example/done", "cancelUrl": "https://app.example/cancel",
                ])))
        #expect(response.status == .created, "checkout: \(String(buffer: response.body))")
        _ = try stripe.completeCheckout(try response.answer(StripeSessionAnswer.self).sessionId, at: Int64(date.timeIntervalSince1970))
        return stripe.events.dropFirst(before).map(\.body)
    }

    /// Posts a Stripe event body, signed at the world's now (Storekeeper checks the signature's time by its clock), to
    /// `POST /stripe/webhooks`.
    func deliverStripe(_ body: Data) async throws -> TestResponse {
        let stripe = try #require(stripe, "the world runs a fake Stripe")
        var headers: HTTPFields = [.contentType: "application/json"]
        headers[HTTPField.Name("Stripe-Signature")!] = stripe.signature(of: body, at: Int64(clock.now.timeIntervalSince1970))
        return try await http.execute(uri: "/stripe/webhooks", method: .post, headers: headers, body: ByteBuffer(data: body))
    }

    /// `google_subscriptions` as text rows (derived_at left out), sorted.
    func subscriptions() async throws -> [String] {
        var rows: [String] = []
        for try await row in try await harness.client.query(
            """
            SELECT concat_ws('|', id, current_token, array_to_string(tokens, ','), product_id, state, expires_at, will_renew, is_trial,
                account_token, periods) FROM google_subscriptions ORDER BY id
            """, logger: TestDatabase.logger
        ).decode(String.self) { rows.append(row) }
        return rows
    }
}

/// The wall clock shifted by an offset a test sets: time goes on flowing (reads stamped one after another stay in
/// order), and a test can jump to a period's end.
extension GooglePlayWorld {
    /// The catalogue's monthly Play plan (`pro`, base plan `monthly`).
    static let monthly = FakeGooglePlay.Plan(productId: "pro", basePlanId: "monthly")

    /// Waits until every Play and App Store notification is processed, and checks that no job failed.
    func settle() async throws {
        try await eventually(timeout: .seconds(60), "Play notifications and App Store notifications to be processed") {
            let waiting = try await harness.count(
                "SELECT count(*) FROM jobs WHERE kind IN ('google-notification', 'apply-notification', 'google-acknowledge', 'stripe-event')")
            let unprocessed = try await harness.count("SELECT count(*) FROM google_notifications WHERE outcome IS NULL")
            return waiting == 0 && unprocessed == 0
        }
        #expect(try await harness.count("SELECT count(*) FROM jobs WHERE state = 'failed'") == 0, "no job failed")
    }
}

final class ShiftedClock: Sendable {
    private let offset = Mutex<TimeInterval>(0)

    var now: Date { Date().addingTimeInterval(offset.withLock { $0 }) }
    /// Moves the clock so that it reads `date` now.
    func set(_ date: Date) { offset.withLock { $0 = date.timeIntervalSinceNow } }
}
