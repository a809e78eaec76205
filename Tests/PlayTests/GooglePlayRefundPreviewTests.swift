import Foundation
import HTTPTypes
import HummingbirdTesting
import Testing

@testable import IntegrationSupport

/// Play's chargeback review, previewed before it is answered: what Storekeeper shows is what the fake Google Play
/// receives through `orders.reviewrefund` once the app's window has passed.
@Suite("Play refund review previews, on real PostgreSQL and a fake Google Play")
struct GooglePlayRefundPreviewTests {
    @Test("a chargeback of a top-up 60 % spent is previewed as a decline with 60000 milliunits, and Google receives exactly that")
    func previewThenReviewed() async throws {
        try await GooglePlayWorld.run(extra: ["STOREKEEPER_REFUND_POLICY": "answerAfterMinutes: 60"]) { world in
            let account = UUID().uuidString.lowercased()
            #expect(try await world.http.withKey(.put, "/v1/accounts/\(account)/consent", #"{"consented": true}"#).status == .ok)
            let bought = world.fake.buyProduct("credits_100", accountToken: account, at: world.clock.now)
            #expect(try await world.push(bought.notification).status == .ok)
            try await world.settle()
            // The free tier's 5 a day go first, then 60 of the top-up's 100: above the default policy's half.
            #expect(try await world.http.spend(UUID(uuidString: account)!, amount: 65).status == .ok)
            let order = try #require(world.fake.order(ofProduct: bought.token))
            #expect(try await world.push(try world.fake.chargeback(order: order, at: world.clock.now).notification).status == .ok)
            try await world.settle()

            let listed = try await world.http.withKey(.get, "/v1/accounts/\(account)/refund-requests", "").answer(RefundRequestListAnswer.self)
            let request = try #require(listed.refundRequests.first)
            let preview = try #require(request.answerPreview)
            #expect(request.store == "google_play" && request.state == "pending")
            #expect(preview.source == "policy" && preview.consumptionPercentage == 60_000 && preview.wouldSend && preview.notSent.isEmpty)
            #expect(preview.answer.refundPreference == "DECLINE" && preview.answer.deliveryStatus == "DELIVERED")
            #expect(world.fake.refundReviews.isEmpty, "the app's hour has not passed")

            // An hour on, the job answers: Play's words for what was shown (DECLINE is DECLINE), the same share.
            world.clock.set(world.clock.now.addingTimeInterval(3600))
            try await world.harness.client.query("UPDATE jobs SET run_at = now() WHERE kind = 'consumption-answer'", logger: TestDatabase.logger)
            try await eventually(timeout: .seconds(30), "the review to reach Google") { world.fake.refundReviews.count == 1 }
            // What Storekeeper sent to Google (a request, not an answer of Storekeeper's): read raw.
            let review = try #require(world.fake.refundReviews.first)
            #expect(review["refundPreference"] as? String == preview.answer.refundPreference)
            let shownShare: Int? = preview.consumptionPercentage.map { Int($0) }
            #expect(review["consumptionPercentageMilliunits"] as? Int == shownShare)
            #expect(review["sampleContentProvided"] as? Bool == preview.answer.sampleContentProvided)
        }
    }
}
