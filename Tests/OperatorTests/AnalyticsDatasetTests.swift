import AppStoreModels
import Application
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import LocalSigning
import NIOCore
import Persistence
import StorekeeperRuntime
import TestSupport
import Testing

@testable import IntegrationSupport

/// The analytics answers on a small App Store history whose figures were worked out by hand from `docs/analytics.md`
/// (the comments say how), not by the code under test. Every notification is signed, sent through the intake in a
/// shuffled order with duplicates, and applied by a real worker; the charts are read through the admin API.
///
/// Days count from 2026-10-01 (d0); d30 is October 31st, d31 November 1st. Six subscriptions, all Sandbox:
///
/// | | product | what happens |
/// |---|---|---|
/// | A | pro.monthly | free trial d0–d7, then paid 9.99 USD d7–d37 and d37–d67 |
/// | B | pro.annual | paid 99.99 USD d2 (to d367), fully refunded d20 |
/// | C | max.monthly | paid 17.99 EUR d5–d35, expires; resubscribes d45–d75 |
/// | D | basic.monthly | paid 2.99 USD d10–d40; renewal fails into grace; Apple recovers it d43 (d43–d73, 2.99) |
/// | E | pro.monthly | free trial d12–d19, expires without converting |
/// | H | pro.monthly | paid ¥1,500 (1,500,000 milliunits JPY) d30–d60 — no JPY rate is configured |
@Suite("Analytics: a hand-computed dataset")
struct AnalyticsDatasetTests {
    static let base = Date(timeIntervalSince1970: 1_790_812_800)  // 2026-10-01T00:00:00Z
    static func day(_ number: Double, hour: Double = 10) -> Int64 { Int64((base.timeIntervalSince1970 + number * 86_400 + hour * 3600) * 1000) }
    static let rates = "{reporting: USD, rates: {EUR: 1.1}}"

    struct Builder {
        let subscription: String
        let bundleId = StorekeeperHarness.bundleId
        let account = UUID()
        var events: [SimulatedEvent] = []

        func transaction(_ id: String, product: String, from: Int64, to: Int64, price: Int64, currency: String, trial: Bool = false)
            -> TransactionPayload
        {
            var transaction = TransactionPayload(
                transactionId: id, originalTransactionId: subscription, productId: product, bundleId: bundleId, environment: .sandbox,
                signedDate: from)
            transaction.webOrderLineItemId = "\(id).line"
            transaction.purchaseDate = from
            transaction.originalPurchaseDate = from
            transaction.expiresDate = to
            transaction.type = "Auto-Renewable Subscription"
            transaction.inAppOwnershipType = "PURCHASED"
            transaction.appAccountToken = account.uuidString.lowercased()
            transaction.price = price
            transaction.currency = currency
            if trial { (transaction.offerType, transaction.offerDiscountType, transaction.offerPeriod) = (1, "FREE_TRIAL", "P1W") }
            return transaction
        }

        mutating func add(
            _ type: String, _ subtype: String?, status: Int32, _ transaction: TransactionPayload, renews: Bool = true, graceUntil: Int64? = nil
        ) {
            var renewal = RenewalInfoPayload(
                originalTransactionId: subscription, productId: transaction.productId, environment: .sandbox, signedDate: transaction.signedDate ?? 0)
            renewal.autoRenewProductId = transaction.productId
            renewal.autoRenewStatus = renews ? 1 : 0
            renewal.gracePeriodExpiresDate = graceUntil
            renewal.isInBillingRetryPeriod = graceUntil != nil
            events.append(
                SimulatedEvent(
                    notificationType: type, subtype: subtype, status: status, signedDate: 0, transaction: transaction, renewalInfo: renewal))
        }
    }

    /// The dataset, each subscription's events in Apple's order.
    static func dataset() -> [SimulatedEvent] {
        var a = Builder(subscription: "3000000000000001")
        a.add(
            "SUBSCRIBED", "INITIAL_BUY", status: 1,
            a.transaction("3000000000000101", product: "pro.monthly", from: day(0), to: day(7), price: 0, currency: "USD", trial: true))
        a.add(
            "DID_RENEW", nil, status: 1,
            a.transaction("3000000000000102", product: "pro.monthly", from: day(7), to: day(37), price: 9990, currency: "USD"))
        a.add(
            "DID_RENEW", nil, status: 1,
            a.transaction("3000000000000103", product: "pro.monthly", from: day(37), to: day(67), price: 9990, currency: "USD"))

        var b = Builder(subscription: "3000000000000002")
        var annual = b.transaction(
            "3000000000000201", product: "pro.annual", from: day(2, hour: 12), to: day(367, hour: 12), price: 99990, currency: "USD")
        b.add("SUBSCRIBED", "INITIAL_BUY", status: 1, annual)
        (annual.revocationDate, annual.revocationReason, annual.revocationType) = (day(20, hour: 12), 0, "REFUND_FULL")
        b.add("REFUND", nil, status: 5, annual, renews: false)

        var c = Builder(subscription: "3000000000000003")
        let first = c.transaction("3000000000000301", product: "max.monthly", from: day(5), to: day(35), price: 17990, currency: "EUR")
        c.add("SUBSCRIBED", "INITIAL_BUY", status: 1, first)
        c.add("EXPIRED", "VOLUNTARY", status: 2, first, renews: false)
        c.add(
            "SUBSCRIBED", "RESUBSCRIBE", status: 1,
            c.transaction("3000000000000302", product: "max.monthly", from: day(45), to: day(75), price: 17990, currency: "EUR"))

        var d = Builder(subscription: "3000000000000004")
        let failed = d.transaction("3000000000000401", product: "basic.monthly", from: day(10), to: day(40), price: 2990, currency: "USD")
        d.add("SUBSCRIBED", "INITIAL_BUY", status: 1, failed)
        d.add("DID_FAIL_TO_RENEW", "GRACE_PERIOD", status: 4, failed, graceUntil: day(46))
        d.add(
            "DID_RENEW", "BILLING_RECOVERY", status: 1,
            d.transaction("3000000000000402", product: "basic.monthly", from: day(43), to: day(73), price: 2990, currency: "USD"))

        var e = Builder(subscription: "3000000000000005")
        let trial = e.transaction("3000000000000501", product: "pro.monthly", from: day(12), to: day(19), price: 0, currency: "USD", trial: true)
        e.add("SUBSCRIBED", "INITIAL_BUY", status: 1, trial)
        e.add("EXPIRED", "VOLUNTARY", status: 2, trial, renews: false)

        var h = Builder(subscription: "3000000000000006")
        h.add(
            "SUBSCRIBED", "INITIAL_BUY", status: 1,
            h.transaction("3000000000000601", product: "pro.monthly", from: day(30, hour: 6), to: day(60, hour: 6), price: 1_500_000, currency: "JPY")
        )

        // Signed in Apple's order, a second apart, an hour ago: every event is in the past of the real clock.
        let signed = Int64((Date().timeIntervalSince1970 - 3600) * 1000)
        return [a, b, c, d, e, h].flatMap(\.events).enumerated().map { index, event in
            var event = event
            event.signedDate = signed + Int64(index) * 1000
            event.transaction?.signedDate = event.signedDate
            event.renewalInfo?.signedDate = event.signedDate
            return event
        }
    }

    @Test("every chart's figures are the hand-computed ones, whatever the delivery order, and deriving again changes nothing")
    func handComputed() async throws {
        try await StorekeeperHarness.run(environment: ["STOREKEEPER_ADMIN_KEYS": "vera:viewer:viewer-key", "STOREKEEPER_CURRENCY_RATES": Self.rates])
        { harness in
            try await harness.withHTTP { client in
                let events = Self.dataset()
                var random = SplitMix64(state: 43)
                // Each event once with its own UUID, a third of them again with the same UUID (Apple's retries), shuffled.
                var deliveries = events.map { ($0, UUID()) }
                deliveries += deliveries.enumerated().filter { $0.offset % 3 == 0 }.map(\.element)
                deliveries.shuffle(using: &random)
                for (event, uuid) in deliveries {
                    let response = try await client.postNotification(try harness.signer.requestBody(for: event, notificationUUID: uuid))
                    #expect(response.status == .ok)
                }
                try await eventually(timeout: .seconds(60), "every notification applied") {
                    let (waiting, stored) = (
                        try await harness.count("SELECT count(*) FROM notifications WHERE applied_at IS NULL"),
                        try await harness.count("SELECT count(*) FROM notifications")
                    )
                    return waiting == 0 && stored == events.count
                }
                try await Self.expectFigures(client)
                let deltas = try await harness.count("SELECT count(*) FROM analytics_deltas")

                // The overview draws the same figures as SVG, with no script, each chart with its CSV.
                let basic = "Basic " + Data("vera:viewer-key".utf8).base64EncodedString()
                let overview = try await client.execute(
                    uri: "/admin/overview?from=2026-10-01&to=2026-11-20&environment=sandbox", method: .get, headers: [.authorization: basic])
                #expect(overview.status == .ok)
                let page = String(buffer: overview.body)
                #expect(page.components(separatedBy: "<svg").count - 1 == 6)
                #expect(!page.contains("<script"))
                // MRR at the end of the range in USD (rates configured): 12980 + 19789 milliunits = 32.77.
                #expect(page.contains("mrr USD <b>32.77</b>"), "\(page.prefix(4000))")
                #expect(page.contains("left out of the total, no rate: JPY"))
                #expect(
                    page.contains(
                        "/admin/analytics/revenue?from=2026-10-01&amp;to=2026-11-20&amp;interval=day&amp;environment=sandbox&amp;format=csv"))
                // A filter that cannot be read: the last 30 days, the reason shown, answered 400; a blank field is the default.
                let refused = try await client.execute(uri: "/admin/overview?from=yesterday", method: .get, headers: [.authorization: basic])
                #expect(refused.status == .badRequest && String(buffer: refused.body).contains("from must be a date"))
                let twice = try await client.execute(
                    uri: "/admin/overview?to=2026-11-20&to=2026-11-19", method: .get, headers: [.authorization: basic])
                #expect(twice.status == .badRequest && String(buffer: twice.body).contains("to is given more than once"))
                let blank = try await client.execute(uri: "/admin/overview?from=&to=", method: .get, headers: [.authorization: basic])
                #expect(blank.status == .ok)

                // Fold the differences into the daily sums, three at a time as a backlog is folded: the same answers.
                var folds = 0
                while try await harness.client.withConnection({ try await AnalyticsRollups(logger: TestDatabase.logger).compact(limit: 3, on: $0) })
                    > 0
                {
                    folds += 1
                }
                #expect(folds > 1)
                #expect(try await harness.count("SELECT count(*) FROM analytics_deltas") == 0)
                try await Self.expectFigures(client)

                // Every event again, with new UUIDs: each subscription is derived again from the same facts, and the
                // rollups gain nothing.
                for event in events {
                    #expect(try await client.postNotification(try harness.signer.requestBody(for: event, notificationUUID: UUID())).status == .ok)
                }
                try await eventually(timeout: .seconds(60), "the repeats applied") {
                    try await harness.count("SELECT count(*) FROM notifications WHERE applied_at IS NULL") == 0
                }
                #expect(try await harness.count("SELECT count(*) FROM analytics_deltas") == 0, "deriving the same facts again changed the figures")
                #expect(deltas > 0)
                try await Self.expectFigures(client)
            }
        }
    }

    /// One-time sales, Sandbox, USD: a lifetime unlock 79.99 on d3, refunded in full on d9; a 30-day pass 3.99 on d4;
    /// a pack of credits 1.99 on d4, half refunded on d6 (Apple's revocationPercentage 50000: 0.995 → 995 milliunits).
    static func sales() -> [SimulatedEvent] {
        func sale(_ id: String, _ product: String, _ type: String, on day: Double, price: Int64) -> TransactionPayload {
            var transaction = TransactionPayload(
                transactionId: id, originalTransactionId: id, productId: product, bundleId: StorekeeperHarness.bundleId, environment: .sandbox,
                signedDate: Self.day(day))
            (transaction.type, transaction.purchaseDate, transaction.price, transaction.currency) = (type, Self.day(day), price, "USD")
            transaction.appAccountToken = UUID().uuidString.lowercased()
            return transaction
        }
        func event(_ type: String, _ transaction: TransactionPayload, signed: Int64) -> SimulatedEvent {
            SimulatedEvent(notificationType: type, subtype: nil, status: nil, signedDate: signed, transaction: transaction, renewalInfo: nil)
        }
        let lifetime = sale("5000000000000001", "basic.lifetime", "Non-Consumable", on: 3, price: 79990)
        var refundedLifetime = lifetime
        (refundedLifetime.revocationDate, refundedLifetime.revocationReason) = (Self.day(9), 1)
        let pass = sale("5000000000000002", "basic.pass30", "Non-Renewing Subscription", on: 4, price: 3990)
        let credits = sale("5000000000000003", "credits.100", "Consumable", on: 4, price: 1990)
        var halfRefunded = credits
        (halfRefunded.revocationDate, halfRefunded.revocationPercentage) = (Self.day(6), 50_000)
        return [
            event("ONE_TIME_CHARGE", lifetime, signed: Self.day(3)), event("REFUND", refundedLifetime, signed: Self.day(9)),
            event("ONE_TIME_CHARGE", pass, signed: Self.day(4)), event("ONE_TIME_CHARGE", credits, signed: Self.day(4)),
            event("REFUND", halfRefunded, signed: Self.day(6)),
        ]
    }

    @Test("one-time sales count in revenue and the refund rate on the days they were sold and refunded, in any order, and in no subscription figure")
    func oneTimeSales() async throws {
        try await StorekeeperHarness.run(environment: ["STOREKEEPER_ADMIN_KEYS": "vera:viewer:viewer-key"]) { harness in
            try await harness.withHTTP { client in
                let events = Self.sales()
                var random = SplitMix64(state: 7)
                // The refunds first, then the sales, then every one again shuffled, then the sales last once more: the
                // newest fact decides, whichever arrives last.
                let (refundsFirst, salesLast) = (events.filter { $0.notificationType == "REFUND" }, events.filter { $0.notificationType != "REFUND" })
                let deliveries = refundsFirst + salesLast + events.shuffled(using: &random) + salesLast
                for event in deliveries {
                    #expect(try await client.postNotification(try harness.signer.requestBody(for: event, notificationUUID: UUID())).status == .ok)
                }
                try await eventually(timeout: .seconds(60), "every sale applied") {
                    try await harness.count("SELECT count(*) FROM notifications WHERE applied_at IS NULL") == 0
                }
                let days = "from=2026-10-01&to=2026-10-11&environment=sandbox"
                let revenue = try await Self.chart(client, "revenue?\(days)")
                #expect(revenue["gross USD"] == [0, 0, 0, 79990, 5980, 0, 0, 0, 0, 0, 0])
                #expect(revenue["refunds USD"] == [0, 0, 0, 0, 0, 0, 995, 0, 0, 79990, 0])
                #expect(revenue["net USD"] == [0, 0, 0, 79990, 5980, 0, -995, 0, 0, -79990, 0])
                let refunds = try await Self.chart(client, "refund-rate?\(days)")
                #expect(refunds["transactions"] == [0, 0, 0, 1, 2, 0, 0, 0, 0, 0, 0])
                #expect(refunds["refunded_transactions"] == [0, 0, 0, 0, 0, 0, 1, 0, 0, 1, 0])
                let actives = try await Self.chart(client, "actives?\(days)")
                #expect(actives["active_subscriptions"]?.allSatisfy { $0 == 0 } == true, "a sale is not a subscription")
                let customers = try await Self.chart(client, "new-customers?\(days)")
                #expect(customers["new_customers"]?.allSatisfy { $0 == 0 } == true)
                #expect(try await Self.chart(client, "mrr?\(days)")["mrr"]?.allSatisfy { $0 == 0 } == true)
            }
        }
    }

    @Test("usage: credits spent and granted per meter and tier, and the share of the allowance used, rolled up from the ledger once")
    func usage() async throws {
        let keys = ["STOREKEEPER_ADMIN_KEYS": "vera:viewer:viewer-key,sam:support:support-key"]
        try await StorekeeperHarness.run(worker: false, environment: keys) { harness in
            try await harness.withHTTP { client in
                // config/tiers.yml: Pro grants 1,000 ai_requests a month; the free tier 5 a day.
                let granted = try await client.execute(
                    uri: "/admin/accounts/usage-1/grants", method: .post,
                    headers: [.authorization: "Bearer support-key", .contentType: "application/json"],
                    body: ByteBuffer(string: #"{"tier": "pro", "duration": "P30D", "reason": "analytics test"}"#))
                #expect(granted.status == .created)
                func spend(_ account: String, _ amount: Int, key: String) async throws {
                    let response = try await client.execute(
                        uri: "/v1/accounts/\(account)/usage", method: .post,
                        headers: [.authorization: "Bearer \(StorekeeperHarness.apiKey)", .contentType: "application/json"],
                        body: ByteBuffer(string: #"{"meter": "ai_requests", "amount": \#(amount), "idempotencyKey": "\#(key)"}"#))
                    #expect(response.status == .ok, "\(String(buffer: response.body))")
                }
                try await spend("usage-1", 200, key: "a")
                try await spend("usage-1", 50, key: "b")
                try await spend("usage-1", 50, key: "b")  // the same request again: charged once
                try await spend("free-1", 2, key: "c")
                let catalogue = harness.components.configuration.catalogue
                // Two ledger ids a call, as a backlog is rolled up in bounded transactions: the same figures as at once.
                func rollUp() async throws -> (rows: Int, more: Bool) {
                    try await harness.client.withTransaction(logger: TestDatabase.logger) { connection in
                        try await AnalyticsRollups(logger: TestDatabase.logger).rollUpUsage(
                            before: Date().addingTimeInterval(60), limit: 2, tier: { AnalyticsCompactionJob.tier(of: $0, catalogue: catalogue) },
                            on: connection)
                    }
                }
                var calls = 0
                while try await rollUp().more { calls += 1 }
                #expect(calls > 1, "the ledger's rows took several bounded calls")
                #expect(try await rollUp().rows == 0, "a ledger row is rolled up once")
                let today = Date().formatted(.iso8601.year().month().day())
                let response = try await client.execute(
                    uri: "/admin/analytics/usage?from=\(today)&to=\(today)&environment=sandbox", method: .get,
                    headers: [.authorization: "Bearer viewer-key"])
                #expect(response.status == .ok)
                var figures: [String: Double?] = [:]
                for series in try response.answer(AnalyticsChartAnswer.self).series where series.meter == "ai_requests" {
                    figures["\(series.tier ?? "") \(series.name)"] = series.points.first?.value
                }
                #expect(figures["pro credits_spent"] == 250)
                #expect(figures["pro credits_granted"] == 1000)
                #expect(figures["pro allowance_used"] == 0.25)
                #expect(figures["free credits_spent"] == 2)
                #expect(figures["free credits_granted"] == 5)
                #expect(figures["free allowance_used"] == 0.4)
                let tierOnly = try await client.execute(
                    uri: "/admin/analytics/usage?from=\(today)&to=\(today)&environment=sandbox&product=free", method: .get,
                    headers: [.authorization: "Bearer viewer-key"])
                #expect(try tierOnly.answer(AnalyticsChartAnswer.self).series.allSatisfy { $0.tier == "free" })
            }
        }
    }

    /// One chart's series by name (and currency).
    static func chart(_ client: any TestClientProtocol, _ query: String) async throws -> [String: [Double?]] {
        let response = try await client.execute(uri: "/admin/analytics/\(query)", method: .get, headers: [.authorization: "Bearer viewer-key"])
        #expect(response.status == .ok, "\(query): \(String(buffer: response.body))")
        var series: [String: [Double?]] = [:]
        for item in try response.answer(AnalyticsChartAnswer.self).series {
            let name = item.name + (item.currency.map { " \($0)" } ?? "")
            series[name] = item.points.map(\.value)
        }
        return series
    }

    static func expectFigures(_ client: any TestClientProtocol) async throws {
        let days = "from=2026-10-01&to=2026-11-20&environment=sandbox"
        let months = "from=2026-10-01&to=2026-11-26&interval=month&environment=sandbox"

        // Active paid subscriptions at the end of each day: A d7–d66, B d2–d19 (refunded d20), C d5–d34 and d45–,
        // D d10–d39 and d43– (the grace gap d40–d42 counts as without access), H d30–.
        let actives = try await chart(client, "actives?\(days)")
        let expectedActives: [Int: Double] = [
            0: 0, 1: 0, 2: 1, 4: 1, 5: 2, 6: 2, 7: 3, 10: 4, 19: 4, 20: 3, 29: 3, 30: 4, 34: 4, 35: 3, 39: 3, 40: 2, 42: 2, 43: 3, 44: 3, 45: 4,
            50: 4,
        ]
        for (day, value) in expectedActives { #expect(actives["active_subscriptions"]?[day] == value, "active_subscriptions d\(day)") }
        // Trials: A d0–d6, E d12–d18.
        let expectedTrials: [Int: Double] = [0: 1, 6: 1, 7: 0, 11: 0, 12: 1, 18: 1, 19: 0, 50: 0]
        for (day, value) in expectedTrials { #expect(actives["active_trials"]?[day] == value, "active_trials d\(day)") }
        #expect(actives["active_subscriptions"]?.count == 51)

        // MRR in milliunits: B 99990 ÷ 12 = 8332.5 → 8333 (halves away from zero); A 9990; D 2990; C 17990 EUR;
        // H 1,500,000 JPY. Converted at EUR 1.1: 17990 × 1.1 = 19789; JPY has no rate and stays out of the total.
        let mrr = try await chart(client, "mrr?\(days)")
        let usd: [Int: Double] = [1: 0, 2: 8333, 6: 8333, 7: 18323, 10: 21313, 19: 21313, 20: 12980, 39: 12980, 40: 9990, 43: 12980, 50: 12980]
        for (day, value) in usd { #expect(mrr["mrr USD"]?[day] == value, "mrr USD d\(day)") }
        let eur: [Int: Double] = [4: 0, 5: 17990, 34: 17990, 35: 0, 44: 0, 45: 17990]
        for (day, value) in eur { #expect(mrr["mrr EUR"]?[day] == value, "mrr EUR d\(day)") }
        #expect(mrr["mrr JPY"]?[29] == 0 && mrr["mrr JPY"]?[30] == 1_500_000)
        let total: [Int: Double] = [
            2: 8333, 5: 8333 + 19789, 7: 18323 + 19789, 10: 21313 + 19789, 20: 12980 + 19789, 35: 12980, 40: 9990, 43: 12980, 45: 12980 + 19789,
        ]
        for (day, value) in total { #expect(mrr["mrr_total USD"]?[day] == value, "mrr_total d\(day)") }
        let document = try await client.execute(uri: "/admin/analytics/mrr?\(days)", method: .get, headers: [.authorization: "Bearer viewer-key"])
            .answer(AnalyticsChartAnswer.self)
        #expect(document.missingRates == ["JPY"])
        #expect(document.reportingCurrency == "USD")

        // Revenue by month. October (d0–d30): USD A 9990 (d7) + B 99990 (d2) + D 2990 (d10) = 112970, refunds B 99990
        // (d20), net 12980; EUR C 17990 (d5); JPY H 1,500,000 (d30). November to the 26th: USD A 9990 (d37) + D 2990
        // (d43) = 12980; EUR C 17990 (d45). Totals in USD: October gross 112970 + 19789 = 132759, net 12980 + 19789.
        let revenue = try await chart(client, "revenue?\(months)")
        #expect(revenue["gross USD"] == [112_970, 12980])
        #expect(revenue["refunds USD"] == [99990, 0])
        #expect(revenue["net USD"] == [12980, 12980])
        #expect(revenue["gross EUR"] == [17990, 17990])
        #expect(revenue["gross JPY"] == [1_500_000, 0])
        #expect(revenue["gross_total USD"] == [132_759, 12980 + 19789])
        #expect(revenue["net_total USD"] == [12980 + 19789, 12980 + 19789])

        // Trial conversion by the month the trial began: October, A and E started, A converted: 1 of 2.
        let conversion = try await chart(client, "trial-conversion?\(months)")
        #expect(conversion["trials_started"] == [2, 0])
        #expect(conversion["converted"] == [1, 0])
        #expect(conversion["conversion_rate"] == [0.5, nil])
        let trials = try await chart(client, "trials?\(days)")
        #expect(trials["new_trials"]?[0] == 1 && trials["new_trials"]?[12] == 1 && trials["new_trials"]?.reduce(0, { $0 + ($1 ?? 0) }) == 2)
        #expect(trials["trial_conversions"]?[7] == 1 && trials["trial_conversions"]?.reduce(0, { $0 + ($1 ?? 0) }) == 1)

        // Churn. October: B ended (d20); nothing was active when October began. November: C ended (d35), of the 4
        // active at the end of October (A, C, D, H); C came back d45 (a resubscription). D's gap ended in Apple's
        // billing recovery: not churn.
        let churn = try await chart(client, "churn?\(months)")
        #expect(churn["churned"] == [1, 1])
        #expect(churn["active_at_start"] == [0, 4])
        #expect(churn["churn_rate"] == [nil, 0.25])
        #expect(churn["resubscriptions"] == [0, 1])
        #expect(try await chart(client, "billing-recoveries?\(months)")["billing_recoveries"] == [0, 1])

        // Refund rate: October's paid transactions A, B, C, D, H (5), one refunded (B): 0.2. November: A, D, C (3), none.
        let refunds = try await chart(client, "refund-rate?\(months)")
        #expect(refunds["transactions"] == [5, 3])
        #expect(refunds["refunded_transactions"] == [1, 0])
        #expect(refunds["refund_rate"] == [0.2, 0])

        // New customers: the first period of A, B, C, D, E, H, all in October.
        #expect(try await chart(client, "new-customers?\(months)")["new_customers"] == [6, 0])

        // Filters: the App Store holds everything, Stripe nothing; pro.monthly is A, E and H.
        #expect(try await chart(client, "new-customers?\(months)&store=stripe")["new_customers"] == [0, 0])
        #expect(try await chart(client, "new-customers?\(months)&product=pro.monthly")["new_customers"] == [3, 0])
        // The first week runs from Thursday d0 to Sunday d3, when only B was active; the next ends Sunday d10 (A, B, C, D).
        #expect(try await chart(client, "actives?\(days)&interval=week")["active_subscriptions"]?.prefix(2) == [1, 4])
    }
}
