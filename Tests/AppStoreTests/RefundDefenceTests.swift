import AppStoreModels
import Foundation
import HTTPTypes
import HummingbirdTesting
import LocalSigning
import NIOCore
import TestSupport
import Testing

@testable import IntegrationSupport

/// Refund defence end to end against the fake Apple, whose Send Consumption Information endpoint checks bodies by
/// Apple's documented rules (not by Storekeeper's): a CONSUMPTION_REQUEST is answered from the credit ledger and the
/// policy, or with the app's own answer, only with consent and before the 12-hour deadline; Apple's decision is
/// recorded on the request.
@Suite("Refund defence, against the fake Apple")
struct RefundDefenceTests {
    static let apiPolicy = ["STOREKEEPER_REFUND_POLICY": "{\"answerAfterMinutes\": 0}"]

    /// A CONSUMPTION_REQUEST about `transaction`, signed at `signedDate`.
    static func consumptionRequest(_ transaction: TransactionPayload, signedDate: Int64, reason: String = "UNINTENDED_PURCHASE") -> SimulatedEvent {
        var event = SimulatedEvent(
            notificationType: "CONSUMPTION_REQUEST", subtype: nil, status: nil, signedDate: signedDate, transaction: transaction, renewalInfo: nil)
        event.consumptionRequestReason = reason
        return event
    }

    static func request(_ harness: StorekeeperHarness, _ id: UUID) async throws -> (state: String, attempts: Int, error: String?, outcome: String?) {
        let rows = try await harness.client.query(
            "SELECT state, attempts, last_error, outcome FROM refund_requests WHERE id = \(id)", logger: TestDatabase.logger)
        for try await row in rows.decode((String, Int, String?, String?).self) { return row }
        Issue.record("no refund request \(id)")
        return ("", 0, nil, nil)
    }

    /// Subscribes through `flow` and tells the fake Apple about the transaction, as Apple knows every one it signed.
    static func subscribe(_ flow: inout LifecycleFlow, knownTo apple: FakeApple) async throws -> TransactionPayload {
        let subscribed = try await flow.send(.subscribe)
        let transaction = try #require(subscribed.transaction)
        apple.server.state.withLock { $0.extraTransactions.append(transaction) }
        return transaction
    }

    /// A pack of 100 credits (`credits.100`, a consumable) bought by `account` and its ONE_TIME_CHARGE delivered; the
    /// fake Apple knows the transaction, as Apple knows every one it signed.
    static func buyPack(_ id: String, for account: UUID, signedDate: Int64, through flow: LifecycleFlow, knownTo apple: FakeApple) async throws
        -> TransactionPayload
    {
        var transaction = TransactionPayload(
            transactionId: id, originalTransactionId: id, productId: "credits.100", bundleId: StorekeeperHarness.bundleId, environment: .sandbox,
            signedDate: signedDate)
        transaction.type = "Consumable"
        transaction.appAccountToken = account.uuidString.lowercased()
        apple.server.state.withLock { $0.extraTransactions.append(transaction) }
        try await flow.post(
            SimulatedEvent(
                notificationType: "ONE_TIME_CHARGE", subtype: nil, status: nil, signedDate: signedDate, transaction: transaction, renewalInfo: nil))
        return transaction
    }

    /// What Storekeeper sent to Apple (not an answer of Storekeeper's): read raw, as the tests check its exact set of keys.
    static func answers(_ apple: FakeApple) -> [[String: Any]] {
        apple.server.state.withLock { $0.consumptionAnswers.map(\.body) }.compactMap {
            try? JSONSerialization.jsonObject(with: $0) as? [String: Any]
        }
    }

    @Test("a top-up 60 % spent: DECLINE with 60000 milli-percent, sent once with consent; Apple's REFUND_DECLINED is listed")
    func consumableAnswer() async throws {
        try await FakeApple.run { apple in
            try await apple.harness(extra: Self.apiPolicy.merging(["STOREKEEPER_ADMIN_KEYS": "admin-key"]) { $1 }) { harness in
                try await harness.withHTTP { client in
                    let account = UUID()
                    let consent = try await client.withKey(.put, "/v1/accounts/\(account)/consent", #"{"consented": true}"#)
                    #expect(try consent.status == .ok && consent.answer(ConsentAnswer.self).consented == true)
                    #expect(try await client.withKey(.put, "/v1/accounts/\(account)/consent", #"{"consented": "yes"}"#).status == .badRequest)

                    let now = Int64(Date().timeIntervalSince1970 * 1000)
                    let flow = LifecycleFlow(harness: harness, client: client, account: account)
                    let transaction = try await Self.buyPack("7100001", for: account, signedDate: now - 60_000, through: flow, knownTo: apple)
                    // The free tier's 5 a day go first, then 60 of the top-up's 100.
                    #expect(try await client.spend(account, amount: 65).status == .ok)

                    let requestId = UUID()
                    try await flow.post(Self.consumptionRequest(transaction, signedDate: now), notificationUUID: requestId)
                    try await eventually("the answer to reach Apple") { Self.answers(apple).count == 1 }
                    let body = Self.answers(apple)[0]
                    #expect(body["customerConsented"] as? Bool == true)
                    #expect(body["consumptionPercentage"] as? Int == 60_000)
                    #expect(body["deliveryStatus"] as? String == "DELIVERED")
                    #expect(body["refundPreference"] as? String == "DECLINE")
                    #expect(body["sampleContentProvided"] as? Bool == false)
                    #expect(
                        Set(body.keys) == [
                            "customerConsented", "consumptionPercentage", "deliveryStatus", "refundPreference", "sampleContentProvided",
                        ])
                    try await eventually("the request to be sent") { try await Self.request(harness, requestId).state == "sent" }

                    // The feed shows a transaction's events once every older transaction of the cluster has ended.
                    // `change` is open in the contract: its members are read as the JSON they are.
                    var change: ArbitraryJSON?
                    try await eventually("the event in the feed") {
                        let feed = try await client.getWithKey("/v1/events?types=purchase.refund_requested").answer(EventFeedPageAnswer.self)
                        change = feed.events.first?.data.change
                        return change != nil
                    }
                    #expect(change?["refundRequestId"]?.string == requestId.uuidString.lowercased())
                    #expect(change?["reason"]?.string == "UNINTENDED_PURCHASE")
                    #expect(change?["deadline"]?.string != nil && change?["answerBy"]?.string != nil)

                    // A redelivered notification is not a new request.
                    let again = try await client.postNotification(
                        try harness.signer.requestBody(for: Self.consumptionRequest(transaction, signedDate: now), notificationUUID: requestId))
                    #expect(try again.answer(IntakeAnswer.self).status == "duplicate")
                    var declined = SimulatedEvent(
                        notificationType: "REFUND_DECLINED", subtype: nil, status: nil, signedDate: now + 60_000, transaction: transaction,
                        renewalInfo: nil)
                    declined.transaction?.signedDate = now + 60_000
                    try await flow.post(declined)
                    #expect(try await Self.request(harness, requestId).outcome == "REFUND_DECLINED")
                    #expect(Self.answers(apple).count == 1)

                    let requests = try await client.getWithKey("/v1/accounts/\(account)/refund-requests")
                        .answer(RefundRequestListAnswer.self).refundRequests
                    #expect(requests.count == 1)
                    #expect(requests.first?.state == "sent" && requests.first?.outcome == "REFUND_DECLINED")
                    #expect(requests.first?.sentAnswer?.refundPreference == "DECLINE")

                    let page = try await client.execute(
                        uri: "/admin?account=\(account)", method: .get, headers: [.authorization: "Bearer admin-key"])
                    let html = String(buffer: page.body)
                    #expect(html.contains("Refund requests") && html.contains("DELIVERED · DECLINE · 60.0 %") && html.contains("REFUND_DECLINED"))
                }
                let (status, shown) = try await TestProcess.run(
                    "storekeeper", ["accounts", "show", (try await Self.accountOfRequests(harness))],
                    environment: ["DATABASE_URL": harness.databaseURL.urlString])
                #expect(status == 0)
                #expect(shown.contains("refund requests, newest first (1)") && shown.contains("7100001  credits.100  UNINTENDED_PURCHASE  sent"))
                #expect(shown.contains("Apple: REFUND_DECLINED"))
            }
        }
    }

    static func accountOfRequests(_ harness: StorekeeperHarness) async throws -> String {
        let rows = try await harness.client.query("SELECT account_id FROM refund_requests LIMIT 1", logger: TestDatabase.logger)
        for try await account in rows.decode(String.self) { return account }
        return "-"
    }

    @Test("a subscription: nothing sent without consent; a 429 is retried; a refused body is recorded as rejected, not retried")
    func subscriptionAnswers() async throws {
        try await FakeApple.run { apple in
            try await apple.harness(extra: Self.apiPolicy) { harness in
                try await harness.withHTTP { client in
                    let account = UUID()
                    var flow = LifecycleFlow(harness: harness, client: client, account: account)
                    let transaction = try await Self.subscribe(&flow, knownTo: apple)
                    let signed = Int64(Date().timeIntervalSince1970 * 1000)

                    let unconsented = UUID()
                    try await flow.post(Self.consumptionRequest(transaction, signedDate: signed), notificationUUID: unconsented)
                    try await eventually("the request without consent to close") {
                        try await Self.request(harness, unconsented).state == "no_consent"
                    }
                    #expect(Self.answers(apple).isEmpty)
                    #expect(!apple.server.requests.contains { $0.hasPrefix("PUT /inApps/v2/transactions/consumption") })

                    #expect(try await client.withKey(.put, "/v1/accounts/\(account)/consent", #"{"consented": true}"#).status == .ok)
                    apple.server.state.withLock { $0.failures = [.init(httpStatus: 429, errorCode: 4_290_000)] }
                    let limited = UUID()
                    try await flow.post(Self.consumptionRequest(transaction, signedDate: signed + 1000), notificationUUID: limited)
                    try await eventually("the rate-limited answer to get through") { try await Self.request(harness, limited).state == "sent" }
                    let body = try #require(Self.answers(apple).first)
                    #expect(body["consumptionPercentage"] == nil, "Apple refuses a percentage for auto-renewable subscriptions")
                    #expect(body["refundPreference"] as? String == "GRANT_FULL" && body["deliveryStatus"] as? String == "DELIVERED")
                    #expect(apple.server.requests.filter { $0.hasPrefix("PUT /inApps/v2/transactions/consumption") }.count == 2)

                    apple.server.state.withLock { $0.failures = [.init(httpStatus: 400, errorCode: 4_000_035)] }
                    let refused = UUID()
                    try await flow.post(Self.consumptionRequest(transaction, signedDate: signed + 2000), notificationUUID: refused)
                    try await eventually("the refused answer to be recorded") { try await Self.request(harness, refused).state == "rejected" }
                    let rejected = try await Self.request(harness, refused)
                    #expect(rejected.attempts == 1 && rejected.error?.contains("4000035") == true)
                    #expect(apple.server.requests.filter { $0.hasPrefix("PUT /inApps/v2/transactions/consumption") }.count == 3)
                    // Not retried: the job leaves the table (its completion may trail the recorded state by a moment).
                    try await eventually("the refused answer's job to end") {
                        try await harness.count("SELECT count(*) FROM jobs WHERE kind = 'consumption-answer'") == 0
                    }
                }
            }
        }
    }

    @Test("the app's own answer wins if given before the policy's turn; too late once sent; Apple's deadline stops all sending")
    func appAnswerAndDeadline() async throws {
        let clock = TestClock()
        try await FakeApple.run { apple in
            try await apple.harness(extra: ["STOREKEEPER_REFUND_POLICY": "answerAfterMinutes: 60"], clock: { clock.now }) { harness in
                try await harness.withHTTP { client in
                    let account = UUID()
                    var flow = LifecycleFlow(harness: harness, client: client, account: account)
                    let transaction = try await Self.subscribe(&flow, knownTo: apple)
                    #expect(try await client.withKey(.put, "/v1/accounts/\(account)/consent", #"{"consented": true}"#).status == .ok)
                    #expect(try await client.spend(account, amount: 600).status == .ok)
                    let signed = Int64(clock.now.timeIntervalSince1970 * 1000)

                    let requestId = UUID()
                    try await flow.post(Self.consumptionRequest(transaction, signedDate: signed), notificationUUID: requestId)
                    let answerURI = "/v1/refund-requests/\(requestId)/answer"
                    let withPercentage = try await client.withKey(
                        .put,
                        answerURI,
                        #"{"deliveryStatus": "DELIVERED", "refundPreference": "GRANT_PRORATED", "consumptionPercentage": 5000, "sampleContentProvided": true}"#
                    )
                    #expect(withPercentage.status == .unprocessableContent)
                    #expect(try withPercentage.answer(ErrorAnswer.self).message.contains("auto-renewable") == true)
                    #expect(
                        try await client.withKey(.put, answerURI, #"{"deliveryStatus": "LOST", "sampleContentProvided": true}"#).status
                            == .unprocessableContent)
                    #expect(try await client.withKey(.put, answerURI, #"{"deliveryStatus": "DELIVERED"}"#).status == .badRequest)
                    #expect(
                        try await client.withKey(
                            .put, "/v1/refund-requests/\(UUID())/answer", #"{"deliveryStatus": "DELIVERED", "sampleContentProvided": true}"#
                        ).status == .notFound)
                    #expect(
                        try await client.withKey(
                            .put, "/v1/refund-requests/nope/answer", #"{"deliveryStatus": "DELIVERED", "sampleContentProvided": true}"#
                        ).status == .badRequest)
                    let own = try await client.withKey(
                        .put,
                        answerURI,
                        #"{"deliveryStatus": "UNDELIVERED_SERVER_OUTAGE", "refundPreference": "GRANT_FULL", "sampleContentProvided": true}"#)
                    #expect(own.status == .ok)
                    #expect(Self.answers(apple).isEmpty, "the policy's turn comes an hour after the request")

                    clock.now = clock.now.addingTimeInterval(3600)
                    try await harness.client.query(
                        "UPDATE jobs SET run_at = now() WHERE kind = 'consumption-answer'", logger: TestDatabase.logger)
                    try await eventually("the app's answer to reach Apple") { Self.answers(apple).count == 1 }
                    let body = Self.answers(apple)[0]
                    #expect(body["deliveryStatus"] as? String == "UNDELIVERED_SERVER_OUTAGE" && body["refundPreference"] as? String == "GRANT_FULL")
                    #expect(body["sampleContentProvided"] as? Bool == true && body["customerConsented"] as? Bool == true)
                    try await eventually("the request to be sent") { try await Self.request(harness, requestId).state == "sent" }
                    let tooLate = try await client.withKey(.put, answerURI, #"{"deliveryStatus": "DELIVERED", "sampleContentProvided": true}"#)
                    #expect(tooLate.status == .conflict)
                    #expect(
                        try tooLate.answer(ErrorAnswer.self).message == "the request is sent: it is no longer pending, so it is too late to answer")

                    // `work` was down for the whole 12 hours: the late job sends nothing.
                    let late = UUID()
                    try await flow.post(Self.consumptionRequest(transaction, signedDate: signed + 1000), notificationUUID: late)
                    clock.now = clock.now.addingTimeInterval(12 * 3600)
                    try await harness.client.query(
                        "UPDATE jobs SET run_at = now() WHERE kind = 'consumption-answer'", logger: TestDatabase.logger)
                    try await eventually("the late request to close") { try await Self.request(harness, late).state == "missed_deadline" }
                    #expect(Self.answers(apple).count == 1)
                    #expect(try await Self.request(harness, late).attempts == 0)
                }
            }
        }
    }

    /// As in `storekeeper dev`: no App Store Server API, so no answer is computed or sent, and the app's own answer is
    /// refused — saying why, not "too late" (a newcomer read that as a clock problem, an hour before `answerAt`).
    @Test("without the App Store Server API a request is not_configured: the app's answer gets 409 naming the API, not 'too late'")
    func notConfigured() async throws {
        try await StorekeeperHarness.run { harness in
            try await harness.withHTTP { client in
                let account = UUID()
                var flow = LifecycleFlow(harness: harness, client: client, account: account)
                let transaction = try #require(try await flow.send(.subscribe).transaction)
                let requestId = UUID()
                let signed = Int64(Date().timeIntervalSince1970 * 1000)
                try await flow.post(Self.consumptionRequest(transaction, signedDate: signed), notificationUUID: requestId)
                #expect(try await Self.request(harness, requestId).state == "not_configured")
                // Never sent, but what it would have been is shown: the period's credits unused, a full refund.
                let listed = try await client.getWithKey("/v1/accounts/\(account)/refund-requests").answer(RefundRequestListAnswer.self)
                let preview = try #require(listed.refundRequests.first?.answerPreview)
                #expect(preview.source == "policy" && preview.consumptionPercentage == 0 && !preview.consented && !preview.wouldSend)
                #expect(preview.notSent == ["not_configured", "no_consent"] && preview.answer.customerConsented == false)
                #expect(preview.answer.refundPreference == "GRANT_FULL" && preview.answer.deliveryStatus == "DELIVERED")
                #expect(preview.answer.consumptionPercentage == nil, "Apple takes no share for a subscription")
                // A request left pending by a server that had the API (read by one that has not) is not sent either.
                try await harness.client.query("UPDATE refund_requests SET state = 'pending' WHERE id = \(requestId)", logger: TestDatabase.logger)
                let pending = try await client.getWithKey("/v1/accounts/\(account)/refund-requests").answer(RefundRequestListAnswer.self)
                #expect(pending.refundRequests.first?.answerPreview?.notSent == ["not_configured", "no_consent"])
                try await harness.client.query(
                    "UPDATE refund_requests SET state = 'not_configured' WHERE id = \(requestId)", logger: TestDatabase.logger)
                // One whose 12 hours are over would be answered by no one, even with the API: it shows none.
                let late = UUID()
                try await flow.post(Self.consumptionRequest(transaction, signedDate: signed - 13 * 3_600_000), notificationUUID: late)
                let both = try await client.getWithKey("/v1/accounts/\(account)/refund-requests").answer(RefundRequestListAnswer.self)
                #expect(both.refundRequests.count == 2 && both.refundRequests.filter { $0.answerPreview != nil }.count == 1)
                #expect(both.refundRequests.first { UUID(uuidString: $0.id) == late }?.state == "not_configured")
                let answer = try await client.withKey(
                    .put, "/v1/refund-requests/\(requestId)/answer", #"{"deliveryStatus": "DELIVERED", "sampleContentProvided": true}"#)
                #expect(answer.status == .conflict)
                let error = try answer.answer(ErrorAnswer.self)
                #expect(error.error == "already_answered")
                #expect(
                    error.message
                        == "the request arrived while the App Store Server API (STOREKEEPER_ASSA_*) was not configured, so Storekeeper sends no answer to it and takes none"
                )
                #expect(try await harness.count("SELECT count(*) FROM jobs WHERE kind = 'consumption-answer'") == 0)
                // Play's review, stored while no service account was set (one removed since the purchase was read):
                // the message names Play's setting, not Apple's. The row is made Play's by hand, as only a Play
                // world with its API unset could open one.
                try await harness.client.query(
                    "UPDATE refund_requests SET store = 'google_play' WHERE id = \(requestId)", logger: TestDatabase.logger)
                let play = try await client.withKey(
                    .put, "/v1/refund-requests/\(requestId)/answer", #"{"deliveryStatus": "DELIVERED", "sampleContentProvided": true}"#)
                #expect(play.status == .conflict)
                #expect(
                    try play.answer(ErrorAnswer.self).message
                        == "the request arrived while the Play Developer API (STOREKEEPER_GOOGLE_SERVICE_ACCOUNT) was not configured, so Storekeeper sends no answer to it and takes none"
                )
            }
        }
    }

    @Test("a CONSUMPTION_REQUEST the first Storekeeper hears of a subscription: the subscription's events come first, the refund request's last")
    func consumptionRequestFirst() async throws {
        try await StorekeeperHarness.run { harness in
            let subscribed = SimulatedEvent.scenario(.subscribe, subscription: harness.subscription(account: UUID()), at: Date())
            var request = Self.consumptionRequest(try #require(subscribed.transaction), signedDate: subscribed.signedDate + 1000)
            request.renewalInfo = subscribed.renewalInfo
            let body = try harness.signer.requestBody(for: request)
            try await harness.withHTTP { client in
                let answer = try await client.postNotification(body)
                #expect(try answer.answer(IntakeAnswer.self).status == "accepted")
            }
            try await eventually("the refund request's event") {
                try await harness.count("SELECT count(*) FROM events WHERE type = 'purchase.refund_requested'") == 1
            }
            var types: [String] = []
            let rows = try await harness.client.query("SELECT type FROM events ORDER BY sequence", logger: TestDatabase.logger)
            for try await type in rows.decode(String.self) { types.append(type) }
            #expect(types.first == "subscription.started", "\(types)")
            #expect(types.last == "purchase.refund_requested" && types.count > 2, "\(types)")
        }
    }
}
