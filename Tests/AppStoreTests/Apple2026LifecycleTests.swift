import AppStoreModels
import Application
import Foundation
import HummingbirdTesting
import Jobs
import LocalSigning
import NIOCore
import Testing

@testable import IntegrationSupport

/// Apple's 2025–26 lifecycle facts through the real intake, worker, PostgreSQL and HTTP answers, as the app and
/// support see them: a monthly-billed 12-month commitment on the status, win-back offers of a lapsed subscriber, and
/// a rescinded consent linked to its account — also when the consent arrives before any subscription names it.
@Suite("Apple's 2025–26 lifecycle, end to end")
struct Apple2026LifecycleTests {
    static let environment = ["STOREKEEPER_ADMIN_KEYS": "admin-key-apple-2026-0001"]
    static let basic = "Basic " + Data("admin:admin-key-apple-2026-0001".utf8).base64EncodedString()
    /// 2027-01-01T00:00:00Z, the commitment's end.
    static let commitmentEnds: Int64 = 1_798_761_600_000

    /// A month of a 12-month commitment billed monthly, and the renewal terms after it.
    static func commitment(_ event: inout SimulatedEvent, month: Int32, renews: Bool) {
        event.transaction?.productId = "pro.annual"
        event.transaction?.price = 8_990
        event.transaction?.billingPlanType = "MONTHLY"
        event.transaction?.commitmentInfo = .init(
            billingPeriodNumber: month, totalBillingPeriods: 12, commitmentExpiresDate: commitmentEnds, commitmentPrice: 107_880)
        event.renewalInfo?.productId = "pro.annual"
        event.renewalInfo?.autoRenewProductId = "pro.annual"
        event.renewalInfo?.autoRenewStatus = 1
        event.renewalInfo?.renewalBillingPlanType = "MONTHLY"
        event.renewalInfo?.commitmentInfo = .init(
            commitmentAutoRenewProductId: "pro.annual", commitmentAutoRenewStatus: renews ? 1 : 0, commitmentRenewalBillingPlanType: "MONTHLY",
            commitmentRenewalDate: commitmentEnds, commitmentRenewalPrice: 9_490)
    }

    static func events(_ client: some TestClientProtocol, _ types: String, account: UUID, atLeast count: Int) async throws -> [EventAnswer] {
        var found: [EventAnswer] = []
        // The feed hands out an event once every older transaction ended, cluster-wide: poll.
        try await eventually("\(count) \(types) event(s)") {
            let feed = try await client.withKey(.get, "/v1/events?types=\(types)&limit=100", "")
            found = try feed.answer(EventFeedPageAnswer.self).events.filter { $0.data.accountId == account.uuidString.lowercased() }
            return found.count >= count
        }
        return found
    }

    @Test("a monthly-billed commitment: billingPlan and commitment on the status; its renewal turned off keeps monthly billing")
    func commitment() async throws {
        try await StorekeeperHarness.run { harness in
            try await harness.withHTTP { client in
                let account = UUID()
                var flow = LifecycleFlow(harness: harness, client: client, account: account)
                try await flow.send(.subscribe) { Self.commitment(&$0, month: 1, renews: true) }
                var subscription = try #require(try await flow.statusAnswer().subscription)
                #expect(subscription.billingPlan == "monthly")
                var commitment = try #require(subscription.commitment)
                #expect(commitment.period == 1 && commitment.of == 12, "\(commitment)")
                #expect(commitment.endsAt == "2027-01-01T00:00:00Z")
                #expect(commitment.renewsTo == "pro.annual" && commitment.priceAfter == 9_490)
                #expect(subscription.winBackOfferIds == [])

                // The customer turns the commitment's renewal off: Apple keeps `autoRenewStatus` 1, the months still bill.
                try await flow.send(.cancel) { event in
                    Self.commitment(&event, month: 1, renews: false)
                    event.renewalInfo?.autoRenewStatus = 1
                    event.renewalInfo?.expirationIntent = nil
                }
                subscription = try #require(try await flow.statusAnswer().subscription)
                commitment = try #require(subscription.commitment)
                #expect(subscription.willRenew == true, "the next month still bills")
                #expect(commitment.renewsTo == nil && commitment.priceAfter == nil, "\(commitment)")
                let disabled = try await Self.events(client, "subscription.renewal_disabled", account: account, atLeast: 1)
                let change = disabled.first?.data.change
                #expect(
                    change?["expiresAt"]?.string == "2027-01-01T00:00:00Z", "access runs to the commitment's end: \(String(describing: change))")

                // The next month: renewed, the month's allowance granted afresh.
                try await flow.send(.renew) { Self.commitment(&$0, month: 2, renews: false) }
                commitment = try #require(try await flow.statusAnswer().subscription?.commitment)
                #expect(commitment.period == 2)
                #expect(
                    try await harness.count(
                        "SELECT count(*) FROM credit_buckets WHERE kind = 'cycle' AND original_transaction_id = '\(flow.originalTransactionId)'") == 2
                )
                // The row reads back whole: `replay` derives the same state from what was stored.
                let (replayStatus, output) = try await TestProcess.run("storekeeper", ["replay", "--all"], environment: harness.processEnvironment)
                #expect(replayStatus == 0 && !output.contains("would change"), "\(output)")
            }
        }
    }

    @Test("a lapsed subscriber's win-back offers: on the status, best first, and one event when they first appear")
    func winBack() async throws {
        try await StorekeeperHarness.run { harness in
            try await harness.withHTTP { client in
                let account = UUID()
                var flow = LifecycleFlow(harness: harness, client: client, account: account)
                try await flow.send(.subscribe)
                let expiry = try await flow.send(.expire) { $0.renewalInfo?.eligibleWinBackOfferIds = ["wb.half", "wb.month"] }
                let subscription = try #require(try await flow.statusAnswer().subscription)
                #expect(subscription.status == "expired")
                #expect(subscription.winBackOfferIds == ["wb.half", "wb.month"])
                // Apple sends the expiry again: still one event.
                try await flow.post(expiry)
                let events = try await Self.events(client, "subscription.win_back_eligible", account: account, atLeast: 1)
                #expect(events.count == 1)
                // `change` is open in the contract: its members are read as the JSON they are.
                let change = events.first?.data.change
                #expect(change?["offerIds"]?.strings == ["wb.half", "wb.month"], "\(String(describing: change))")
                #expect(try await harness.count("SELECT count(*) FROM events WHERE type = 'subscription.win_back_eligible'") == 1)
            }
        }
    }

    @Test("a rescinded consent reaches the account of its app transaction: at once when known, later when first named")
    func consentRescinded() async throws {
        try await StorekeeperHarness.run(environment: Self.environment) { harness in
            try await harness.withHTTP { client in
                let signer = harness.signer.signer
                func rescind(_ appTransactionId: String) async throws {
                    let now = Int64(Date().timeIntervalSince1970 * 1000)
                    var app = AppTransactionPayload(
                        receiptType: .sandbox, appAppleId: nil, bundleId: StorekeeperHarness.bundleId, receiptCreationDate: now - 86_400_000)
                    app.appTransactionId = appTransactionId
                    let payload = NotificationPayload(
                        notificationType: "RESCIND_CONSENT", notificationUUID: UUID().uuidString.lowercased(),
                        appData: NotificationAppData(
                            appAppleId: nil, bundleId: StorekeeperHarness.bundleId, environment: .sandbox,
                            signedAppTransactionInfo: try signer.sign(app)),
                        signedDate: now)
                    let response = try await client.postNotification(try JSONEncoder().encode(["signedPayload": try signer.sign(payload)]))
                    #expect(response.status == .ok)
                    try await eventually("the rescission applied") {
                        try await harness.count("SELECT count(*) FROM notifications WHERE applied_at IS NULL") == 0
                    }
                }

                // Known: the subscription names the app transaction, then consent is rescinded.
                let known = UUID()
                var flow = LifecycleFlow(harness: harness, client: client, account: known)
                try await flow.send(.subscribe) { $0.transaction?.appTransactionId = "704289572311476001" }
                try await rescind("704289572311476001")
                let first = try await Self.events(client, "account.consent_rescinded", account: known, atLeast: 1)
                let change = first.first?.data.change
                #expect(change?["appTransactionId"]?.string == "704289572311476001")
                let page = String(
                    buffer: try await client.execute(
                        uri: "/admin?account=\(known.uuidString.lowercased())", method: .get, headers: [.authorization: Self.basic]
                    ).body)
                #expect(page.contains("Consent rescinded") && page.contains("704289572311476001"), "the account page says so")

                // Seen first: nobody to tell yet; the subscription that later names it links it and sends the event.
                try await rescind("704289572311476002")
                #expect(try await harness.count("SELECT count(*) FROM consent_rescissions WHERE account_id IS NULL") == 1)
                let later = UUID()
                var second = LifecycleFlow(harness: harness, client: client, account: later)
                try await second.send(.subscribe) { $0.renewalInfo?.appTransactionId = "704289572311476002" }
                _ = try await Self.events(client, "account.consent_rescinded", account: later, atLeast: 1)
                #expect(try await harness.count("SELECT count(*) FROM consent_rescissions WHERE account_id IS NULL") == 0)
                // A renewal of either changes nothing more: each rescission is sent once.
                try await second.send(.renew) { $0.renewalInfo?.appTransactionId = "704289572311476002" }
                try await flow.send(.renew) { $0.transaction?.appTransactionId = "704289572311476001" }
                #expect(try await harness.count("SELECT count(*) FROM events WHERE type = 'account.consent_rescinded'") == 2)
                // A subscription stored before its app transaction was kept (a row from before sql/0044): the rescission
                // waits; `replay --write` fills the column (it sends no event, so it links nothing); the `consent-link`
                // sweep (run here at once; every minute in a worker) links it and sends the event.
                let upgraded = UUID()
                var third = LifecycleFlow(harness: harness, client: client, account: upgraded)
                try await third.send(.subscribe) { $0.transaction?.appTransactionId = "704289572311476003" }
                _ = try await harness.count(
                    "WITH cleared AS (UPDATE subscriptions SET app_transaction_id = NULL WHERE original_transaction_id = '\(third.originalTransactionId)' RETURNING 1) SELECT count(*) FROM cleared"
                )
                try await rescind("704289572311476003")
                #expect(try await harness.count("SELECT count(*) FROM consent_rescissions WHERE account_id IS NULL") == 1)
                let (replayStatus, output) = try await TestProcess.run(
                    "storekeeper", ["replay", "--all", "--write"], environment: harness.processEnvironment)
                #expect(replayStatus == 0, "\(output)")
                let sweep = try NewJob(kind: ConsentLinkJob.jobKind, arguments: [String: String]())
                _ = try await harness.client.withConnection { try await harness.components.queue.enqueue(sweep, on: $0) }
                _ = try await Self.events(client, "account.consent_rescinded", account: upgraded, atLeast: 1)
                #expect(try await harness.count("SELECT count(*) FROM consent_rescissions WHERE account_id IS NULL") == 0)
                // An unrelated account hears nothing.
                #expect(
                    try await harness.count(
                        "SELECT count(*) FROM consent_rescissions WHERE account_id IS DISTINCT FROM '\(known.uuidString.lowercased())' AND account_id IS DISTINCT FROM '\(later.uuidString.lowercased())' AND account_id IS DISTINCT FROM '\(upgraded.uuidString.lowercased())'"
                    ) == 0)
            }
        }
    }
}
