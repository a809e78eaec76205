import Foundation
import GooglePlay
import GooglePlayFake
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import NIOCore
import Persistence
import Subscriptions
import Testing

@testable import IntegrationSupport

/// Play's refunds as a customer and Google see them, through the real pipeline and the fake Google Play: a chargeback
/// review is answered through `orders.reviewrefund` from what the customer really used; a refund without a
/// notification is found by the hourly `voidedpurchases.list`; a granted top-up is consumed and shows nowhere as
/// waiting.
@Suite("Play refunds, reviews and acknowledgements, on real PostgreSQL and a fake Google Play")
struct GooglePlayRefundTests {
    static let policy = ["STOREKEEPER_REFUND_POLICY": #"{"answerAfterMinutes": 0}"#]

    @Test("a chargeback of a top-up 60 % spent: reviewrefund DECLINE with 60000 milliunits and the spends as usage events, sent once with consent")
    func chargebackReview() async throws {
        try await GooglePlayWorld.run(extra: Self.policy) { world in
            let account = UUID()
            let id = account.uuidString.lowercased()
            #expect(try await world.http.withKey(.put, "/v1/accounts/\(id)/consent", #"{"consented": true}"#).status == .ok)
            let bought = world.fake.buyProduct("credits_100", accountToken: id, at: world.clock.now)
            #expect(try await world.push(bought.notification).status == .ok)
            try await world.settle()
            #expect(world.fake.productState(bought.token)?.consumed == true, "a granted top-up is consumed")
            // The free tier's 5 a day go first, then 60 of the top-up's 100.
            #expect(try await world.http.spend(account, amount: 65).status == .ok)
            let order = try #require(world.fake.order(ofProduct: bought.token))
            let chargeback = try world.fake.chargeback(order: order, at: world.clock.now)
            // Sent twice (two messages of one review): one request, one answer.
            #expect(try await world.push(chargeback.notification).status == .ok)
            #expect(try await world.push(chargeback.notification).status == .ok)
            try await eventually(timeout: .seconds(30), "the review to reach Google") { world.fake.refundReviews.count == 1 }
            // What Storekeeper sent to Google (a request, not an answer of Storekeeper's): read raw.
            let review = try #require(world.fake.refundReviews.first)
            #expect(review["orderId"] as? String == order && review["pendingRefundToken"] as? String == chargeback.token)
            #expect(review["refundPreference"] as? String == "DECLINE")
            #expect(review["consumptionPercentageMilliunits"] as? Int == 60_000)
            let events = try #require(review["consumptionUsageEvents"] as? [[String: Any]])
            #expect(events.count == 1 && events.first?["consumptionItemDescription"] as? String == "60 ai_requests")
            let requests = try await world.http.withKey(.get, "/v1/accounts/\(id)/refund-requests", "")
            let listed = try #require(try requests.answer(RefundRequestListAnswer.self).refundRequests.first)
            #expect(listed.store == "google_play" && listed.transactionId == order)
            // An absent member: read raw on purpose (a decoded type would not see it either way).
            let raw = try #require((requests.json["refundRequests"] as? [[String: Any]])?.first)
            #expect(raw["reviewToken"] == nil, "the review token is never shown")
            try await eventually(timeout: .seconds(30), "the request to be sent") {
                try await world.harness.count("SELECT count(*) FROM refund_requests WHERE state = 'sent'") == 1
            }
            try await world.settle()
            let requestCount = try await world.harness.count("SELECT count(*) FROM refund_requests")
            #expect(world.fake.refundReviews.count == 1 && requestCount == 1)
        }
    }

    @Test("a chargeback without the account's consent sends nothing; an order Storekeeper does not hold opens nothing")
    func reviewWithoutConsent() async throws {
        try await GooglePlayWorld.run(extra: Self.policy) { world in
            let account = UUID().uuidString.lowercased()
            let bought = world.fake.buyProduct("basic_lifetime", accountToken: account, at: world.clock.now)
            #expect(try await world.push(bought.notification).status == .ok)
            try await world.settle()
            #expect(world.fake.productState(bought.token)?.acknowledged == true, "a granted unlock is acknowledged, not consumed")
            #expect(
                try await world.push(
                    try world.fake.chargeback(order: try #require(world.fake.order(ofProduct: bought.token)), at: world.clock.now).notification
                ).status == .ok)
            try await eventually(timeout: .seconds(30), "the request to close") {
                try await world.harness.count("SELECT count(*) FROM refund_requests WHERE state = 'no_consent'") == 1
            }
            let stranger = world.fake.buyProduct("credits_100", accountToken: nil, at: world.clock.now)
            #expect(
                try await world.push(
                    try world.fake.chargeback(order: try #require(world.fake.order(ofProduct: stranger.token)), at: world.clock.now).notification
                ).status == .ok)
            try await world.settle()
            #expect(try await world.harness.count("SELECT count(*) FROM google_notifications WHERE outcome = 'review_ignored'") == 1)
            #expect(try await world.harness.count("SELECT count(*) FROM refund_requests") == 1)
            #expect(world.fake.refundReviews.isEmpty)
        }
    }

    @Test("a refund whose notification never came is found by voidedpurchases.list: the unlock ends; listing again changes nothing")
    func voidedCatchUp() async throws {
        try await GooglePlayWorld.run { world in
            let account = UUID()
            let bought = world.fake.buyProduct("basic_lifetime", accountToken: account.uuidString.lowercased(), at: world.clock.now)
            #expect(try await world.push(bought.notification).status == .ok)
            try await world.settle()
            #expect(
                try await world.http.getWithKey("/v1/accounts/\(account.uuidString.lowercased())/status").answer(StatusAnswer.self).tier == "basic")
            _ = try world.fake.refund(order: try #require(world.fake.order(ofProduct: bought.token)), at: world.clock.now)  // not pushed
            let refunds = world.harness.components.googleRefunds
            #expect(try await refunds.catchUp() == .init(listed: 1, recorded: 1))
            #expect(try await refunds.catchUp() == .init(listed: 1, recorded: 0))
            // The status cache hears of the change through the database's NOTIFY: a moment after the commit.
            try await eventually("the unlock to end in the account's status") {
                let status = try await world.http.getWithKey("/v1/accounts/\(account.uuidString.lowercased())/status").answer(StatusAnswer.self)
                return status.tier == "free" && status.entitled == false
            }
        }
    }

    @Test("a purchase granted more than a day ago and not acknowledged shows on the dashboard and in the metric; one acknowledged does not")
    func unacknowledged() async throws {
        try await GooglePlayWorld.run(extra: ["STOREKEEPER_ADMIN_KEYS": "admin-key"]) { world in
            let bought = world.fake.buyProduct("credits_100", accountToken: UUID().uuidString.lowercased(), at: world.clock.now)
            #expect(try await world.push(bought.notification).status == .ok)
            try await world.settle()
            #expect(try await world.harness.count("SELECT count(*) FROM google_acknowledgements WHERE acknowledged_at IS NOT NULL") == 1)
            // A purchase granted two days ago whose acknowledgement never got through (Google away since).
            _ = try await world.harness.count(
                """
                WITH late AS (INSERT INTO google_acknowledgements (purchase_token, kind, product_id, granted_at, last_error)
                    VALUES ('late-token-0123456789abcdefghij', 'product', 'basic_lifetime', now() - interval '2 days', 'unavailable: 503') RETURNING 1)
                SELECT count(*) FROM late
                """)
            let metrics = String(buffer: try await world.http.execute(uri: "/metrics", method: .get).body)
            #expect(metrics.contains("storekeeper_google_unacknowledged_purchases 1"))
            let page = String(buffer: try await world.http.execute(uri: "/admin", method: .get, headers: [.authorization: "Bearer admin-key"]).body)
            #expect(
                page.contains("Play purchases not acknowledged") && page.contains("1 waiting more than a day")
                    && page.contains("late-token-0123456789abc"))
            #expect(!page.contains(String(bought.token.prefix(24))), "the acknowledged purchase is not listed")
        }
    }

    @Test(
        "a top-up bought naming no account is claimed by its productId: its credits go there and it is consumed; a wrong productId is 422, another account's claim under keep 409"
    )
    func claimOneTime() async throws {
        try await GooglePlayWorld.run { world in
            let bought = world.fake.buyProduct("credits_100", accountToken: nil, at: world.clock.now)
            #expect(try await world.push(bought.notification).status == .ok)
            try await world.settle()
            #expect(world.fake.productState(bought.token)?.consumed == false, "nobody's purchase is not consumed")
            let account = UUID().uuidString.lowercased()
            let other = UUID().uuidString.lowercased()
            func claim(_ id: String, _ product: String?) async throws -> TestResponse {
                var body: [String: Any] = ["purchaseToken": bought.token]
                if let product { body["productId"] = product }
                return try await world.http.execute(
                    uri: "/v1/accounts/\(id)/google/purchases", method: .post,
                    headers: [.authorization: "Bearer \(StorekeeperHarness.apiKey)", .contentType: "application/json"],
                    body: ByteBuffer(data: try JSONSerialization.data(withJSONObject: body)))
            }
            let wrong = try await claim(account, "basic_lifetime")
            #expect(
                try wrong.status == .unprocessableContent && wrong.answer(ErrorAnswer.self).error == "product_mismatch",
                "\(String(buffer: wrong.body))")
            let claimed = try await claim(account, "credits_100")
            #expect(claimed.status == .ok, "\(String(buffer: claimed.body))")
            #expect(try claimed.answer(StatusAnswer.self).credits["ai_requests"]?.topUp == 100)
            // Named without a productId: Play knows the token only as a one-time product's; another account holds it.
            let taken = try await claim(other, nil)
            #expect(
                try taken.status == .conflict && taken.answer(ErrorAnswer.self).error == "purchase_owned_elsewhere", "\(String(buffer: taken.body))")
            try await world.settle()
            #expect(world.fake.productState(bought.token)?.consumed == true, "consumed once granted")
        }
    }

    @Test("reads stored out of order: the newest read is the one asked last, the granted read is kept apart, and erasure rewrites both")
    func readsOutOfOrder() async throws {
        try await StorekeeperHarness.run(worker: false) { harness in
            func read(_ state: String, account: String, at seconds: TimeInterval) throws -> (PlayProductRead, [UInt8]) {
                let body: [String: Any] = [
                    "purchaseStateContext": ["purchaseState": state], "orderId": "GPA.9", "obfuscatedExternalAccountId": account,
                    "productLineItem": [["productId": "credits_100", "productOfferDetails": ["quantity": 1]]],
                ]
                let bytes = Array(try JSONSerialization.data(withJSONObject: body))
                return (
                    PlayProductRead(
                        purchaseToken: "tok-order", readAt: Date(timeIntervalSince1970: seconds),
                        purchase: try JSONDecoder().decode(ProductPurchaseV2.self, from: Data(bytes))), bytes
                )
            }
            let store = GoogleProductStore(logger: TestDatabase.logger)
            let later = try read("CANCELLED", account: "new-id", at: 2_000)
            let granted = try read("PURCHASED", account: "old-id", at: 1_000)
            try await harness.client.withConnection { connection in
                try await store.save(later.0, body: later.1, on: connection)
                try await store.save(granted.0, body: granted.1, on: connection)  // asked earlier, stored later
                let held = try #require(try await store.reads("tok-order", on: connection))
                #expect(held.newest.purchase.purchaseState == .cancelled && held.newest.readAt == Date(timeIntervalSince1970: 2_000))
                #expect(held.purchased?.purchase.purchaseState == .purchased && held.purchased?.readAt == Date(timeIntervalSince1970: 1_000))
                let erased = ErasedAccounts(secret: "erasure-key-for-the-product-reads-0123456789", logger: TestDatabase.logger)
                _ = try await erased.moveGooglePlay(held: [], from: AccountID("old-id")!, to: AccountID("pseudonym-1")!, on: connection)
                let after = try #require(try await store.reads("tok-order", on: connection))
                #expect(after.purchased?.purchase.obfuscatedExternalAccountId == "pseudonym-1")
                #expect(after.newest.purchase.obfuscatedExternalAccountId == "new-id", "another id's read is not touched")
            }
        }
    }
}
