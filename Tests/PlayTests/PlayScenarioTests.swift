import Application
import Foundation
import GooglePlayFake
import LocalSigning
import Subscriptions
import Testing

@testable import IntegrationSupport

/// Google Play's behaviour pinned as data (`PlayScenarios/*.json`): what an Android customer does and what Play's
/// billing does run against the fake Google Play (which holds Play's state), each action's notification is pushed —
/// in order, and at the end shuffled with duplicates — and the account's status must read as the scenario says: what
/// the customer would see. Expectations come from Play's subscription lifecycle documentation, not from the code.
@Suite("Play scenarios: Android purchases through the real pipeline and a fake Google Play, on real PostgreSQL")
struct PlayScenarioTests {
    struct Scenario: Decodable, CustomTestStringConvertible {
        var name: String
        var source: String
        var steps: [Step]
        /// The day the status is read.
        var now: Double
        /// The catalogue's `upgrade_credits` for this scenario (the default catalogue's `prorate` otherwise).
        var upgradeCredits: String?
        /// Whether a fake Stripe runs beside the fake Play (a `stripeBuy` step).
        var stripe: Bool { steps.contains { $0.do == "stripeBuy" } }
        var expect: AccountExpectation
        var file = ""

        var testDescription: String { "\(file): \(name)" }

        enum CodingKeys: String, CodingKey { case name, source, steps, now, upgradeCredits, expect }
    }

    struct Step: Decodable {
        /// buy, renew, cancel, restore, grace, hold, recover, pause, resume, expire, revoke, upgrade, downgrade,
        /// appStoreBuy, stripeBuy (`product`: a Stripe price); buyProduct (a one-time product, `quantity` units); refund (`order`: `first` or `latest` of the
        /// subscription, `product` for the one-time purchase; `quantity` units of it).
        var `do`: String
        var at: Double
        var product: String?
        var trialDays: Int?
        var quantity: Int?
        var order: String?
    }

    /// Day 0 of every scenario.
    static let epoch = Date(timeIntervalSince1970: 1_796_083_200)  // 2026-12-01T00:00:00Z

    static let scenarios: [Scenario] = ScenarioFiles.load("PlayScenarios") { $0.file = $1 }

    @Test("each scenario: pushed in order, then shuffled with duplicates", arguments: scenarios)
    func scenario(_ scenario: Scenario) async throws {
        let tiers = try ScenarioFiles.catalogue(upgradeCredits: scenario.upgradeCredits)
        defer { if let tiers { try? FileManager.default.removeItem(atPath: tiers) } }
        for shuffled in [false, true] {
            try await GooglePlayWorld.run(stripe: scenario.stripe, extra: tiers.map { ["STOREKEEPER_TIERS": $0] } ?? [:]) { world in
                try await Self.play(scenario, world: world, shuffled: shuffled)
            }
        }
    }

    static func play(_ scenario: Scenario, world: GooglePlayWorld, shuffled: Bool) async throws {
        let account = UUID()
        let plans = FakeGooglePlay.plans(of: world.harness.components.configuration.catalogue)
        var token: String?
        var productToken: String?
        var pushed: [[String: Any]] = []
        var apple: [Data] = []
        var stripe: [Data] = []
        for step in scenario.steps {
            let now = epoch.addingTimeInterval(step.at * 86_400)
            world.clock.set(now)
            let sent: [String: Any]
            switch step.do {
            case "buy":
                let plan = try #require(plans[step.product ?? "pro/monthly"], "\(scenario.file): a google_play product of the catalogue")
                let bought = world.fake.buy(plan, accountToken: account.uuidString.lowercased(), at: now, trialDays: step.trialDays ?? 0)
                (token, sent) = (bought.token, bought.notification)
            case "upgrade", "downgrade":
                let plan = try #require(plans[step.product ?? ""], "\(scenario.file): a google_play product of the catalogue")
                let replaced = try world.fake.replace(try #require(token), with: plan, at: now)
                (token, sent) = (replaced.token, replaced.notification)
            case "buyProduct":
                let product = try #require(step.product, "\(scenario.file): buyProduct names a product")
                let bought = world.fake.buyProduct(product, quantity: step.quantity ?? 1, accountToken: account.uuidString.lowercased(), at: now)
                (productToken, sent) = (bought.token, bought.notification)
            case "refund":
                let orders =
                    step.order == "product"
                    ? [productToken.flatMap(world.fake.order(ofProduct:))].compactMap { $0 }
                    : token.map(world.fake.orders(ofSubscription:)) ?? []
                let order = try #require(step.order == "first" ? orders.first : orders.last, "\(scenario.file): an order to refund")
                sent = try world.fake.refund(order: order, quantity: step.quantity, at: now).notification
            case "stripeBuy":
                let events = try await world.stripeBuy(step.product ?? "price_pro_monthly", account: account.uuidString.lowercased(), at: now)
                stripe += events
                if !shuffled { for body in events { #expect(try await world.deliverStripe(body).status == .ok) } }
                continue
            case "appStoreBuy":
                var bought = world.harness.subscription(account: account)
                bought.productId = step.product ?? "pro.monthly"
                apple.append(try world.harness.signer.requestBody(for: SimulatedEvent.scenario(.subscribe, subscription: bought, at: now)))
                if !shuffled { #expect(try await world.http.postNotification(apple.last!).status == .ok) }
                continue
            default:
                sent = try action(step.do, token: try #require(token), world: world, at: now)
            }
            pushed.append(sent)
            // In order: each notification arrives as Play publishes it, and is processed before the next action.
            if !shuffled { try await deliver([sent], world: world) }
        }
        world.clock.set(epoch.addingTimeInterval(scenario.now * 86_400))
        if shuffled {
            // Every notification at the end, in any order, some twice (Pub/Sub redelivers; Play sends again): each read
            // sees Play's state now.
            var all = pushed + pushed.filter { _ in Bool.random() }
            all.shuffle()
            for body in apple.shuffled() { #expect(try await world.http.postNotification(body).status == .ok) }
            for body in (stripe + stripe.filter { _ in Bool.random() }).shuffled() { #expect(try await world.deliverStripe(body).status == .ok) }
            try await deliver(all, world: world)
        }
        try await world.settle()
        try await scenario.expect.check(
            label: "\(scenario.file) (\(shuffled ? "shuffled" : "in order"))", account: account,
            http: world.http, harness: world.harness, shuffled: shuffled, stores: ["google_play", "app_store", "stripe"])
    }

    static func action(_ name: String, token: String, world: GooglePlayWorld, at now: Date) throws -> [String: Any] {
        switch name {
        case "renew": return try world.fake.renew(token, at: now)
        case "cancel": return try world.fake.cancel(token, at: now)
        case "restore": return try world.fake.restore(token, at: now)
        case "grace": return try world.fake.grace(token, at: now)
        case "hold": return try world.fake.hold(token, at: now)
        case "recover": return try world.fake.recover(token, at: now)
        case "pause": return try world.fake.pause(token, at: now)
        case "resume": return try world.fake.resume(token, at: now)
        case "expire": return try world.fake.expire(token, at: now)
        case "revoke": return try world.fake.revoke(token, at: now)
        default:
            Issue.record("unknown step \(name)")
            return [:]
        }
    }

    static func deliver(_ notifications: [[String: Any]], world: GooglePlayWorld) async throws {
        for notification in notifications {
            let answer = try await world.push(notification)
            #expect(answer.status == .ok && answer.json["status"] as? String == "accepted")
        }
        try await world.settle()
    }
}
