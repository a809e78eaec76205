import Application
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import NIOCore
import Testing

@testable import IntegrationSupport

/// One-time purchases on Play beyond the scenarios: claims under the `transfer` policy and of a purchase still pending,
/// an acknowledgement Google refuses because the app finished the purchase itself, and `google sync` over tokens of
/// both kinds.
@Suite("Google Play one-time purchases", .serialized)
struct GooglePlayOneTimeTests {
    static func claim(_ world: GooglePlayWorld, _ account: String, token: String, product: String? = nil) async throws -> TestResponse {
        var body: [String: Any] = ["purchaseToken": token]
        if let product { body["productId"] = product }
        return try await world.http.execute(
            uri: "/v1/accounts/\(account)/google/purchases", method: .post,
            headers: [.authorization: "Bearer \(StorekeeperHarness.apiKey)", .contentType: "application/json"],
            body: ByteBuffer(data: try JSONSerialization.data(withJSONObject: body)))
    }

    static func entitled(_ world: GooglePlayWorld, _ account: String) async throws -> Bool {
        let status = try await world.http.execute(
            uri: "/v1/accounts/\(account)/status", method: .get, headers: [.authorization: "Bearer \(StorekeeperHarness.apiKey)"])
        return try status.answer(StatusAnswer.self).entitled == true
    }

    @Test("under transfer, another account's lifetime unlock and top-up are still 409: an unlock's credits may be spent and cannot move")
    func transferPolicy() async throws {
        try await GooglePlayWorld.run(extra: ["STOREKEEPER_TRANSFER_POLICY": "transfer"]) { world in
            let owner = UUID().uuidString.lowercased()
            let other = UUID().uuidString.lowercased()
            let unlock = world.fake.buyProduct("basic_lifetime", accountToken: owner, at: world.clock.now)
            let topUp = world.fake.buyProduct("credits_100", accountToken: owner, at: world.clock.now)
            #expect(try await world.push(unlock.notification).status == .ok)
            #expect(try await world.push(topUp.notification).status == .ok)
            try await world.settle()
            for (token, product) in [(unlock.token, "basic_lifetime"), (topUp.token, "credits_100")] {
                let taken = try await Self.claim(world, other, token: token, product: product)
                #expect(
                    try taken.status == .conflict && taken.answer(ErrorAnswer.self).error == "purchase_owned_elsewhere",
                    "\(String(buffer: taken.body))")
            }
            #expect(try await Self.entitled(world, owner))
            #expect(try await !Self.entitled(world, other))
            // The owner's own claim of what it holds is answered, not refused.
            #expect(try await Self.claim(world, owner, token: unlock.token, product: "basic_lifetime").status == .ok)
        }
    }

    @Test("a purchase still pending belongs to the account it names: another's claim is 409; once paid it unlocks the named account")
    func pendingPurchase() async throws {
        try await GooglePlayWorld.run { world in
            let named = UUID().uuidString.lowercased()
            let other = UUID().uuidString.lowercased()
            let bought = world.fake.buyProduct("basic_lifetime", accountToken: named, pending: true, at: world.clock.now)
            #expect(try await world.push(bought.notification).status == .ok)
            try await world.settle()
            #expect(try await !Self.entitled(world, named), "a pending purchase grants nothing")
            #expect(world.fake.productState(bought.token)?.acknowledged == false, "nor is it acknowledged")
            let taken = try await Self.claim(world, other, token: bought.token, product: "basic_lifetime")
            #expect(
                try taken.status == .conflict && taken.answer(ErrorAnswer.self).error == "purchase_owned_elsewhere", "\(String(buffer: taken.body))")
            #expect(try await world.push(try world.fake.completePayment(bought.token, at: world.clock.now)).status == .ok)
            try await world.settle()
            #expect(try await Self.entitled(world, named))
            #expect(try await !Self.entitled(world, other))
            #expect(world.fake.productState(bought.token)?.acknowledged == true)
        }
    }

    @Test("a top-up the app consumed itself: Google refuses Storekeeper's consume, the read shows it consumed, so it leaves the unacknowledged count")
    func consumedByTheApp() async throws {
        try await GooglePlayWorld.run(worker: false) { world in
            let account = UUID().uuidString.lowercased()
            let bought = world.fake.buyProduct("credits_100", accountToken: nil, at: world.clock.now.addingTimeInterval(-2 * 86_400))
            // Claimed (read, credited, its consumption enqueued) before any worker runs; then the app consumes it itself.
            #expect(try await Self.claim(world, account, token: bought.token, product: "credits_100").status == .ok)
            #expect(try await world.harness.count("SELECT count(*) FROM jobs WHERE kind = 'google-acknowledge'") == 1)
            world.fake.consumeInApp(bought.token)
            let worker = world.harness.components.worker(options: .init(concurrency: 2, pollInterval: .milliseconds(100)))
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask { try await worker.run() }
                defer { group.cancelAll() }
                try await eventually("the acknowledgement job to end") {
                    try await world.harness.count("SELECT count(*) FROM jobs WHERE kind = 'google-acknowledge'") == 0
                }
            }
            let rows = try await world.harness.count(
                "SELECT count(*) FROM google_acknowledgements WHERE acknowledged_at IS NOT NULL AND last_error LIKE '%consumed%'")
            #expect(rows == 1, "recorded as finished, with Google's answer kept")
            #expect(
                try await world.harness.count("SELECT count(*) FROM google_purchase_tokens WHERE kind = 'one_time_product'") == 1,
                "a claimed token is filed, so google sync reads it again")
            let metrics = String(buffer: try await world.http.execute(uri: "/metrics", method: .get).body)
            #expect(
                metrics.contains("storekeeper_google_unacknowledged_purchases 0"),
                "\(metrics.split(separator: "\n").filter { $0.contains("unacknowledged") })")
        }
    }

    @Test("google sync reads a first import's subscription and product tokens, each by its kind, then every filed token again")
    func syncBothKinds() async throws {
        try await GooglePlayWorld.run(worker: false) { world in
            let account = UUID().uuidString.lowercased()
            let subscription = world.fake.buy(GooglePlayWorld.monthly, accountToken: "import-sub", at: Date()).token
            let unlock = world.fake.buyProduct("basic_lifetime", accountToken: account, at: Date()).token
            let sync = GooglePlaySync(
                client: world.harness.client, subscriptions: world.harness.components.googlePlaySubscriptions,
                products: world.harness.components.googlePlayProducts, logger: TestDatabase.logger)
            let first = try await sync.sync(tokens: [subscription, unlock, "never-sold"])
            #expect(first == .init(read: 2, notFound: 1, refused: 0, failed: 0))
            #expect(try await world.subscriptions().count == 1)
            #expect(try await Self.entitled(world, account))
            let kinds = try await world.harness.count(
                """
                SELECT count(*) FROM google_purchase_tokens WHERE (purchase_token = '\(subscription)' AND kind = 'subscription')
                    OR (purchase_token = '\(unlock)' AND kind = 'one_time_product') OR (purchase_token = 'never-sold' AND kind = 'unknown')
                """)
            #expect(kinds == 3, "each token filed as what its read showed")
            let requests = world.fake.apiRequests
            let again = try await sync.sync(tokens: nil)
            #expect(again == .init(read: 2, notFound: 1, refused: 0, failed: 0))
            #expect(world.fake.apiRequests - requests == 4, "one read per placed token, two for the unknown one")
        }
    }
}
