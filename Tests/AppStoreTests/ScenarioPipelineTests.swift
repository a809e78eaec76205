import AppStoreModels
import Application
import Foundation
import HummingbirdTesting
import LocalSigning
import Persistence
import PostgresNIO
import Subscriptions
import TestSupport
import Testing

@testable import IntegrationSupport

/// The scenario files again, now through every real part: notifications signed by an Apple-shaped chain and POSTed to
/// the intake, claims to `POST /v1/accounts/{id}/transactions`, the queue and a worker applying them on PostgreSQL, the
/// answer read from `GET /v1/accounts/{id}/status`. The pure suite pins the rules; this one pins that persistence
/// (the ledger snapshot, bucket keys, the archive, ownership) says the same.
@Suite("Scenarios through the real pipeline, on real PostgreSQL")
struct ScenarioPipelineTests {
    @Test("every scenario file ends in the expected status and credits")
    func everyScenario() async throws {
        try await Self.run(comparingEachApply: false)
    }

    /// Each event carries its account's status as the apply left it — read again, or worked out from the snapshot and
    /// the posts (sql/0054) — which must be what a read answers then. Here after every apply (the test above delivers a
    /// scenario's notifications at once, so that several share a transaction, and compares after the last).
    @Test("after every apply, each account's newest event carries the status a read then answers")
    func everyApply() async throws {
        try await Self.run(comparingEachApply: true)
    }

    static func run(comparingEachApply: Bool) async throws {
        let tiers = FileManager.default.temporaryDirectory.appendingPathComponent("sk-scenario-tiers-\(UUID().uuidString).yml")
        try Self.catalogue.write(to: tiers, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(at: tiers) }
        let clock = TestClock()
        let environment = [
            "STOREKEEPER_TIERS": tiers.path, "STOREKEEPER_ENVIRONMENTS": "Sandbox,Production", "STOREKEEPER_TRANSFER_POLICY": "transfer",
            "STOREKEEPER_APP_APPLE_ID": String(Self.appAppleId),
        ]
        try await StorekeeperHarness.run(environment: environment, clock: { clock.now }) { harness in
            try await harness.withHTTP { client in
                var notifications = 0
                var comparedScenarios = 0
                var comparedApplies = 0
                for (index, file) in Scenario.files.enumerated() {
                    var scenario = try Scenario.load(file)
                    // One catalogue serves the run: scenarios of another upgrade policy are pinned by the pure suite.
                    guard (scenario.upgradeCredits ?? "prorate") == "prorate" else { continue }
                    scenario.namespace = index + 1
                    scenario.bundleId = StorekeeperHarness.bundleId
                    clock.now = Scenario.date(scenario.expect.at)
                    let accounts = Set(
                        scenario.events.flatMap { [$0.tx.token, $0.claim] }.compactMap { $0 } + [scenario.expect.account]
                            + (scenario.expect.ownsNothing ?? [])
                    ).map(scenario.account).sorted { $0.text < $1.text }
                    for event in scenario.events {
                        guard try await Self.deliver(event, of: scenario, harness: harness, client: client, now: clock.now) else { continue }
                        notifications += 1
                        guard comparingEachApply else { continue }
                        let expected = notifications
                        try await eventually("\(file): the notification applied") {
                            try await harness.count("SELECT count(*) FROM notifications WHERE apply_outcome IS NOT NULL") == expected
                        }
                        for account in accounts {
                            let compared = try await Self.compareNewestEvent(of: account, harness: harness, client: client, label: scenario.name)
                            if compared { comparedApplies += 1 }
                        }
                    }
                    let expected = notifications
                    try await eventually("\(file): every notification applied") {
                        try await harness.count("SELECT count(*) FROM notifications WHERE apply_outcome IS NOT NULL") == expected
                    }
                    if try await Self.check(scenario, harness: harness, client: client) { comparedScenarios += 1 }
                }
                #expect(
                    comparedScenarios >= Scenario.files.count / 2, "statuses compared in \(comparedScenarios) of \(Scenario.files.count) scenarios")
                if comparingEachApply {
                    #expect(comparedApplies >= notifications * 3 / 4, "statuses compared after \(comparedApplies) of \(notifications) applies")
                }
            }
        }
    }

    /// Delivers one event the way it reaches Storekeeper; returns whether it was a notification (applied by the worker).
    static func deliver(
        _ event: Scenario.Event, of scenario: Scenario, harness: StorekeeperHarness, client: any TestClientProtocol, now: Date
    ) async throws -> Bool {
        let transaction = scenario.payload(event)
        let signer = harness.signer.signer
        if let alias = event.claim {
            let response = try await client.postTransaction(try signer.sign(transaction), account: scenario.account(alias))
            #expect(response.status == .ok, "\(scenario.name): claim answered \(response.status)")
            return false
        }
        if let status = event.api {
            // A Server API answer, recorded and applied as the renewal recheck does.
            let snapshot = SubscriptionEvent(serverStatus: status, transaction: transaction, renewalInfo: scenario.renewalPayload(event))
            try await harness.client.withTransaction(logger: TestDatabase.logger) { connection in
                try await SubscriptionHistory(logger: TestDatabase.logger).record(snapshot, signedData: try signer.sign(transaction), on: connection)
                let appStore = AppStoreSubscriptions(writer: harness.components.writer, client: harness.client, logger: TestDatabase.logger)
                _ = try await appStore.apply(snapshot, now: now, on: connection)
            }
            return false
        }
        let parts = (event.notification ?? "").split(separator: "/").map(String.init)
        let simulated = SimulatedEvent(
            notificationType: parts.first ?? "", subtype: parts.count > 1 ? parts[1] : nil, status: event.status,
            signedDate: Scenario.milliseconds(event.at), transaction: transaction, renewalInfo: scenario.renewalPayload(event))
        let notificationSigner = NotificationSigner(
            signer: signer, bundleId: StorekeeperHarness.bundleId, environment: AppStoreEnvironment(rawValue: event.env ?? "Sandbox"),
            appAppleId: appAppleId)
        let response = try await client.postNotification(try notificationSigner.requestBody(for: simulated))
        #expect(response.status == .ok, "\(scenario.name): intake answered \(response.status)")
        return true
    }

    /// Checks the scenario's expectations; answers whether the newest event's status was compared.
    @discardableResult
    static func check(_ scenario: Scenario, harness: StorekeeperHarness, client: any TestClientProtocol) async throws -> Bool {
        let expect = scenario.expect
        let account = scenario.account(expect.account)
        let label = scenario.name
        // `serve`'s cache hears of an apply by NOTIFY a moment after its commit, and a Server API snapshot is applied
        // by the test itself just before this: asked until the answer meets the expectations, or for a while (a read
        // at once answered the cached status from before the snapshot, once in a CI run).
        var answer = try await client.getWithKey("/v1/accounts/\(account)/status").answer(StatusAnswer.self)
        try? await eventually(timeout: .seconds(5), "\(label): the status endpoint to answer the scenario's state") {
            answer = try await client.getWithKey("/v1/accounts/\(account)/status").answer(StatusAnswer.self)
            return answer.state == expect.state && answer.entitled == expect.entitled
                && expect.expiresAt.map { answer.subscription?.expiresAt == Scenario.date($0).formatted(.iso8601) } != false
                && expect.credits.allSatisfy { answer.credits[$0.key]?.remaining == $0.value }
        }
        let compared = try await compareNewestEvent(of: account, harness: harness, client: client, label: label)
        #expect(answer.state == expect.state, "\(label): state")
        #expect(answer.entitled == expect.entitled, "\(label): entitled")
        #expect(answer.tier == expect.tier ?? (expect.entitled ? nil : "free"), "\(label): tier")
        let subscription = answer.subscription
        if let product = expect.product { #expect(subscription?.productId == product, "\(label): product") }
        if let expires = expect.expiresAt {
            #expect(subscription?.expiresAt == Scenario.date(expires).formatted(.iso8601), "\(label): expiresAt")
        }
        if let willRenew = expect.willRenew { #expect(subscription?.willRenew == willRenew, "\(label): willRenew") }
        let credits = answer.credits
        for (meter, remaining) in expect.credits {
            #expect(credits[meter]?.remaining == remaining, "\(label): \(meter) remaining")
        }
        for (meter, topUp) in expect.topUp ?? [:] {
            #expect(credits[meter]?.topUp == topUp, "\(label): \(meter) top-up")
        }
        for alias in expect.ownsNothing ?? [] {
            #expect(
                try await harness.count("SELECT count(*) FROM subscriptions WHERE account_id = '\(scenario.account(alias))'") == 0,
                "\(label): \(alias) owns nothing")
        }
        if let reason = expect.endReason {
            #expect(
                try await harness.count(
                    "SELECT count(*) FROM subscriptions WHERE account_id = '\(account)' AND end_reason = '\(reason)'") == 1, "\(label): end reason")
        }
        return compared
    }

    /// The newest event of the account carries its status as the apply that wrote it left it: at the scenario's
    /// instant, with nothing written for the account since, what the status endpoint answers. (A clawback or a
    /// revocation of credits alone emits no event: then the event is older than the balance, and there is nothing to
    /// compare.) Answers whether there was something to compare.
    static func compareNewestEvent(of account: AccountID, harness: StorekeeperHarness, client: any TestClientProtocol, label: String)
        async throws -> Bool
    {
        let newest = try await harness.client.withConnection { connection in
            try await EventLog(logger: TestDatabase.logger).recent(account: account, limit: 1, on: connection).first
        }
        guard let newest, try await harness.count(Self.writtenAfter(newest.transaction, account: account)) == 0 else { return false }
        // Raw: the event log's row (not an HTTP answer) against the whole answer, key for key, unknown keys included.
        let data = try JSONSerialization.jsonObject(with: Data(newest.body.utf8)) as? [String: Any]
        let expected = data?["status"] as? NSDictionary
        // `serve`'s cache hears of the apply by NOTIFY, a moment after its commit: asked until it agrees, or for a while.
        var answered: NSDictionary?
        try? await eventually(timeout: .seconds(5), "\(label): the status endpoint agrees with the newest event") {
            answered = try await client.getWithKey("/v1/accounts/\(account)/status").json as NSDictionary
            return answered == expected
        }
        #expect(expected != nil && answered == expected, "\(label): the newest event's status (\(newest.type))")
        return true
    }

    static let appAppleId: Int64 = 1_234_567_890

    /// Counts the account's subscription rows and ledger rows written by transactions after `transaction` (a fresh
    /// cluster: transaction ids are still below 2³²).
    static func writtenAfter(_ transaction: Int64, account: AccountID) -> String {
        """
        SELECT (SELECT count(*) FROM subscriptions WHERE account_id = '\(account)' AND xmin::text::bigint > \(transaction))
            + (SELECT count(*) FROM credit_ledger l JOIN credit_buckets b ON b.key = l.bucket
               LEFT JOIN subscriptions s ON s.original_transaction_id = b.original_transaction_id
               WHERE coalesce(b.account_id, s.account_id) = '\(account)' AND l.xmin::text::bigint > \(transaction))
        """
    }

    /// The catalogue of the scenario files (ScenarioWorld.catalogue), as `config/tiers.yml` would state it.
    static let catalogue = """
        meters:
          - id: ai
            display_name: AI requests
        free:
          display_name: Free
          allowances:
            ai: { per_cycle: 50 }
        tiers:
          - id: max
            level: 1
            display_name: Max
            products:
              - { id: max.monthly, period: P1M, price: 19990, currency: USD }
            allowances:
              ai: { per_cycle: 3000, trial_cap: 300 }
          - id: pro
            level: 2
            display_name: Pro
            products:
              - { id: pro.monthly, period: P1M, price: 9990, currency: USD }
              - { id: pro.quarterly, period: P3M, price: 27990, currency: USD }
              - { id: pro.annual, period: P1Y, price: 99990, currency: USD }
            allowances:
              ai: { per_cycle: 1000, trial_cap: 100 }
          - id: reader
            level: 3
            display_name: Reader
            products:
              - { id: reader.monthly, period: P1M, price: 4990, currency: USD }
              - { id: reader.lifetime, type: lifetime, price: 49990, currency: USD }
              - { id: reader.pass30, type: non_renewing, duration: P30D, price: 5990, currency: USD }
            allowances:
              ai: { per_cycle: 200 }
        top_ups:
          - { id: credits.500, meter: ai, credits: 500, price: 4990, currency: USD }
        """
}
