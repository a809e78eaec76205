import AppStoreModels
import Application
import Events
import Foundation
import HummingbirdTesting
import LocalSigning
import PostgresNIO
import StripeFake
import StripeStore
import Subscriptions
import Testing

@testable import IntegrationSupport

/// Stripe's behaviour pinned as data (`StripeScenarios/*.json`): what a customer does on the web (and in the App
/// Store) runs against the fake Stripe, every event Stripe sent is then delivered — in order, and shuffled with
/// duplicates — and the account's status must read as the scenario says, which is what the customer would see.
/// Expectations come from Stripe's documentation of each flow, not from Storekeeper's code.
@Suite("Stripe scenarios: web purchases through the real pipeline and a fake Stripe, on real PostgreSQL")
struct StripeScenarioTests {
    struct Scenario: Decodable, CustomTestStringConvertible {
        var name: String
        var source: String
        var steps: [Step]
        /// The day the status is read.
        var now: Double
        /// The catalogue's `upgrade_credits` for this scenario (the default catalogue's `prorate` otherwise).
        var upgradeCredits: String?
        var expect: AccountExpectation
        var file = ""

        var testDescription: String { "\(file): \(name)" }

        enum CodingKeys: String, CodingKey { case name, source, steps, now, upgradeCredits, expect }
    }

    struct Step: Decodable {
        /// checkout, renew, payOpenInvoice, giveUp, cancel, changePrice, refund, dispute, closeDispute, appStoreBuy,
        /// appStoreRefund, checkoutRefused.
        var `do`: String
        var at: Double
        var price: String?
        var trialDays: Int?
        var paying: Bool?
        var atPeriodEnd: Bool?
        var marking: String?
        /// refund/dispute: which paid invoice (0 the first; -1, the default, the newest).
        var invoice: Int?
        var amount: Int64?
        var won: Bool?
        var product: String?
    }

    static let scenarios: [Scenario] = ScenarioFiles.load("StripeScenarios") { $0.file = $1 }

    @Test("each scenario: delivered in order, then shuffled with duplicates", arguments: scenarios)
    func scenario(_ scenario: Scenario) async throws {
        var extra: [String: String] = [:]
        extra["STOREKEEPER_TIERS"] = try ScenarioFiles.catalogue(upgradeCredits: scenario.upgradeCredits)
        defer { if let path = extra["STOREKEEPER_TIERS"] { try? FileManager.default.removeItem(atPath: path) } }
        for order in ["in order", "shuffled with duplicates"] {
            try await StripeWorld.run(extra: extra) { world in try await Self.play(scenario, world: world, shuffled: order != "in order") }
        }
    }

    static func play(_ scenario: Scenario, world: StripeWorld, shuffled: Bool) async throws {
        let account = UUID()
        var subscription: String?
        var payment: String?
        var apple: [Data] = []
        let appleSubscription = world.harness.subscription(account: account)
        var applePeriod: DateInterval?
        var delivered = (stripe: 0, apple: 0)
        for step in scenario.steps {
            let time = StripeWorld.time(step.at)
            world.setClock(time)
            let date = Date(timeIntervalSince1970: TimeInterval(time))
            switch step.do {
            case "checkout":
                let session = try await world.buy(step.price!, account: account.uuidString.lowercased(), at: time, trialDays: step.trialDays)
                subscription = session.subscription ?? subscription
                payment = session.paymentIntent ?? payment
            case "checkoutRefused":
                // Everything sent so far is delivered and processed first: the refusal reads the account as the app would.
                try await deliver(world, apple: apple, shuffled: false, from: &delivered)
                let response = try await world.post(
                    "/v1/accounts/\(account.uuidString.lowercased())/stripe/checkout",
                    ["productId": step.price!, "successUrl": "https://app.example/done", "cancelUrl": "https://app.example/cancel"])
                #expect(
                    try response.status == .conflict && response.answer(ErrorAnswer.self).error == "already_entitled",
                    "\(scenario.name): paying twice is refused")
            case "subscribeUnnamed":
                // The app's backend created the subscription through the API: no session reference, no metadata.
                let created = try world.fake.createSession(priceId: step.price!, mode: "subscription", account: nil)
                subscription = try world.fake.completeCheckout(created, at: time).subscription
            case "link":
                if !shuffled { try await deliver(world, apple: apple, shuffled: false, from: &delivered) }
                let response = try await world.post("/v1/accounts/\(account.uuidString.lowercased())/stripe/link", ["subscriptionId": subscription!])
                #expect(
                    try response.status == .ok && response.answer(StripeLinkAnswer.self).accountId == account.uuidString.lowercased(),
                    "\(scenario.name): link")
            case "renew": try world.fake.renew(subscription!, paying: step.paying ?? true)
            case "payOpenInvoice": try world.fake.payOpenInvoice(subscription!, at: time)
            case "giveUp": try world.fake.giveUp(subscription!, at: time, marking: .init(step.marking ?? "canceled"))
            case "cancel": try world.fake.cancel(subscription!, at: time, atPeriodEnd: step.atPeriodEnd ?? true)
            case "changePrice": try world.fake.changePrice(subscription!, to: step.price!, at: time)
            case "refund": try world.fake.refund(invoice: paidInvoice(world, subscription!, step.invoice), amount: step.amount, at: time)
            case "refundPayment":
                let intent = try #require(payment, "refundPayment follows a one-time checkout")
                try world.fake.refund(paymentIntent: intent, amount: step.amount, at: time)
            case "dispute": _ = try world.fake.dispute(invoice: paidInvoice(world, subscription!, step.invoice), at: time)
            case "closeDispute":
                let dispute = try #require(world.fake.state.withLock { $0.disputes.keys.sorted().last })
                try world.fake.closeDispute(dispute, won: step.won ?? true, at: time)
            case "appStoreBuy":
                var bought = appleSubscription
                bought.productId = step.product ?? "pro.monthly"
                let event = SimulatedEvent.scenario(.subscribe, subscription: bought, at: date)
                applePeriod = DateInterval(start: date, duration: bought.period)
                apple.append(try world.harness.signer.requestBody(for: event))
            case "appStoreRefund":
                let event = SimulatedEvent.scenario(.refund, subscription: appleSubscription, currentPeriod: applePeriod, at: date)
                apple.append(try world.harness.signer.requestBody(for: event))
            default:
                Issue.record("\(scenario.file): unknown step \(step.do)")
            }
            // In order: each step's events arrive as it happens, as Stripe sends them.
            if !shuffled { try await deliver(world, apple: apple, shuffled: false, from: &delivered) }
        }
        world.setClock(StripeWorld.time(scenario.now))
        // Shuffled: every event arrives at the end, in any order and some twice — the worker reads the final objects.
        if shuffled { try await deliver(world, apple: apple, shuffled: true, from: &delivered) }
        try await check(scenario, account: account, world: world, shuffled: shuffled)
    }

    /// Delivers every Stripe event and App Store notification sent so far (again: duplicates are the point).
    /// `delivered`: how many were delivered before (Stripe's events, then Apple's notifications, counted together).
    static func deliver(_ world: StripeWorld, apple: [Data], shuffled: Bool, from delivered: inout (stripe: Int, apple: Int)) async throws {
        enum Delivery {
            case stripe(Data)
            case apple(Data)
        }
        let stripe = world.fake.events.map { Delivery.stripe($0.body) }
        let appleSent = apple.map { Delivery.apple($0) }
        // In order, only what is new since the last delivery; shuffled, everything again.
        var deliveries = shuffled ? stripe + appleSent : Array(stripe.dropFirst(delivered.stripe)) + Array(appleSent.dropFirst(delivered.apple))
        delivered = (stripe.count, appleSent.count)
        if shuffled {
            deliveries += deliveries.filter { _ in Bool.random() }
            deliveries.shuffle()
        }
        for delivery in deliveries {
            switch delivery {
            case .stripe(let body): #expect(try await world.deliver(body).status == .ok)
            case .apple(let body): #expect(try await world.http.postNotification(body).status == .ok)
            }
        }
        try await world.settle()
    }

    static func paidInvoice(_ world: StripeWorld, _ subscription: String, _ index: Int?) -> String {
        let paid = world.fake.state.withLock { state in
            state.invoices.values.filter { $0.subscription == subscription && $0.isPaid && $0.amountPaid > 0 }.sorted { $0.id < $1.id }.map(\.id)
        }
        let index = index ?? -1
        return paid[index < 0 ? paid.count + index : index]
    }

    static func check(_ scenario: Scenario, account: UUID, world: StripeWorld, shuffled: Bool) async throws {
        try await scenario.expect.check(
            label: "\(scenario.file) (\(shuffled ? "shuffled" : "in order"))", account: account, http: world.http,
            harness: world.harness, shuffled: shuffled, stores: ["stripe", "app_store"])
    }
}
