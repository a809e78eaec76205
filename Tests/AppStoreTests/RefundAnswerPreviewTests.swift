import Foundation
import HTTPTypes
import HummingbirdTesting
import TestSupport
import Testing

@testable import IntegrationSupport

/// What Storekeeper would answer an open refund request, shown before the answer is due: worked out from the ledger as
/// it stands, and — the point of a preview — the very body the store then receives.
@Suite("Refund answer previews, against the fake Apple")
struct RefundAnswerPreviewTests {
    @Test("an open request shows the answer due: it follows the ledger, consent and the app's own answer, and Apple then receives exactly it")
    func previewThenSent() async throws {
        let clock = TestClock()
        try await FakeApple.run { apple in
            let settings = ["STOREKEEPER_REFUND_POLICY": "answerAfterMinutes: 60", "STOREKEEPER_ADMIN_KEYS": "admin-key"]
            try await apple.harness(extra: settings, clock: { clock.now }) { harness in
                try await harness.withHTTP { client in
                    let account = UUID()
                    let now = Int64(clock.now.timeIntervalSince1970 * 1000)
                    let flow = LifecycleFlow(harness: harness, client: client, account: account)
                    let transaction = try await RefundDefenceTests.buyPack(
                        "7200001", for: account, signedDate: now - 60_000, through: flow, knownTo: apple)
                    // The free tier's 5 a day go first, then 20 of the pack's 100.
                    #expect(try await client.spend(account, amount: 25).status == .ok)
                    let requestId = UUID()
                    try await flow.post(RefundDefenceTests.consumptionRequest(transaction, signedDate: now), notificationUUID: requestId)
                    func preview() async throws -> RefundRequestAnswer.Preview? {
                        try await client.getWithKey("/v1/accounts/\(account)/refund-requests").answer(RefundRequestListAnswer.self)
                            .refundRequests.first?.answerPreview
                    }
                    // 20 % of the pack used, not above the default policy's half: a prorated refund. No consent yet,
                    // so nothing would be sent.
                    var shown = try #require(try await preview())
                    #expect(shown.source == "policy" && shown.consumptionPercentage == 20_000 && !shown.consented && !shown.wouldSend)
                    #expect(shown.notSent == ["no_consent"] && shown.answer.customerConsented == false)
                    #expect(shown.answer.deliveryStatus == "DELIVERED" && shown.answer.refundPreference == "GRANT_PRORATED")
                    #expect(shown.answer.consumptionPercentage == 20_000 && shown.answer.sampleContentProvided == false)

                    // Consent given and 40 more spent (60 % of the pack): the preview follows the ledger — a decline.
                    #expect(try await client.withKey(.put, "/v1/accounts/\(account)/consent", #"{"consented": true}"#).status == .ok)
                    #expect(try await client.spend(account, amount: 40).status == .ok)
                    shown = try #require(try await preview())
                    #expect(shown.consumptionPercentage == 60_000 && shown.consented && shown.wouldSend && shown.notSent.isEmpty)
                    #expect(shown.answer.refundPreference == "DECLINE" && shown.answer.consumptionPercentage == 60_000)
                    let line = "would answer DELIVERED · DECLINE · 60.0 % — the policy's"
                    let page = try await client.execute(uri: "/admin?account=\(account)", method: .get, headers: [.authorization: "Bearer admin-key"])
                    let html = String(buffer: page.body)
                    #expect(
                        html.contains(line.replacingOccurrences(of: "'", with: "&#39;")),
                        "\(html.suffix(from: html.range(of: "Refund requests")?.lowerBound ?? html.endIndex).prefix(600))")
                    let (status, text) = try await TestProcess.run(
                        "storekeeper", ["accounts", "show", account.uuidString.lowercased()],
                        environment: ["DATABASE_URL": harness.databaseURL.urlString, "STOREKEEPER_REFUND_POLICY": "answerAfterMinutes: 60"])
                    #expect(status == 0 && text.contains("7200001  credits.100  UNINTENDED_PURCHASE  pending  \(line)"), "\(text.suffix(1200))")

                    // The app's own answer takes the policy's place, in the preview as in what is sent.
                    let own = #"{"deliveryStatus": "UNDELIVERED_QUALITY_ISSUE", "refundPreference": "GRANT_FULL", "sampleContentProvided": true}"#
                    #expect(try await client.withKey(.put, "/v1/refund-requests/\(requestId)/answer", own).status == .ok)
                    shown = try #require(try await preview())
                    #expect(shown.source == "app" && shown.consumptionPercentage == 60_000 && shown.wouldSend)
                    #expect(shown.answer.deliveryStatus == "UNDELIVERED_QUALITY_ISSUE" && shown.answer.refundPreference == "GRANT_FULL")

                    // At answerAt Apple receives exactly what was shown, and a closed request shows no preview.
                    clock.now = clock.now.addingTimeInterval(3600)
                    try await harness.client.query("UPDATE jobs SET run_at = now() WHERE kind = 'consumption-answer'", logger: TestDatabase.logger)
                    try await eventually("the answer to reach Apple") { RefundDefenceTests.answers(apple).count == 1 }
                    let body = RefundDefenceTests.answers(apple)[0]
                    #expect(body["deliveryStatus"] as? String == shown.answer.deliveryStatus)
                    #expect(body["refundPreference"] as? String == shown.answer.refundPreference)
                    #expect(body["consumptionPercentage"] as? Int == shown.answer.consumptionPercentage)
                    #expect(body["sampleContentProvided"] as? Bool == shown.answer.sampleContentProvided)
                    #expect(body["customerConsented"] as? Bool == shown.answer.customerConsented)
                    try await eventually("the request to be sent") { try await RefundDefenceTests.request(harness, requestId).state == "sent" }
                    let closed = try await client.getWithKey("/v1/accounts/\(account)/refund-requests").answer(RefundRequestListAnswer.self)
                    #expect(closed.refundRequests.allSatisfy { $0.answerPreview == nil })
                }
            }
        }
    }
}
