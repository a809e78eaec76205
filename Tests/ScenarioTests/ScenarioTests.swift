import AppStoreModels
import Credits
import Foundation
import LocalSigning
import SignedData
import Subscriptions
import TestSupport
import Testing

/// The scenario suite: one file per scenario in `Scenarios/` (signed events in, expected status and credits out),
/// written from Apple's documentation and from what a customer must see. Every event is signed with an Apple-shaped
/// chain and verified before it is delivered; each scenario runs in the order the events happened, then under 100
/// random delivery orders with duplicates, and must end in the expected status and credits — and in the same
/// bucket balances — every time.
@Suite("Scenarios")
struct ScenarioTests {
    static var names: [String] { Scenario.files }

    @Test("the suite holds at least 40 scenarios")
    func suiteSize() {
        #expect(Self.names.count >= 40)
    }

    @Test("scenario", arguments: names)
    func scenario(_ file: String) async throws {
        let scenario = try Scenario.load(file)
        let deliveries = try await Self.signedAndVerified(scenario)
        let expectedAt = Scenario.date(scenario.expect.at)

        // In the order things happened, each delivered when it was signed.
        let catalogue = scenario.catalogue(ScenarioWorld.catalogue)
        var world = ScenarioWorld(catalogue: catalogue)
        for (delivery, at) in deliveries { world.deliver(delivery, now: at) }
        world.settleAll(now: expectedAt)
        try Self.check(world, against: scenario, order: "in order")
        // The rules reach a fixpoint: once their operations are posted, nothing more is due.
        for derivation in world.derivations() {
            let again = SubscriptionCredits.operationsDue(derivation, catalogue: world.catalogue, ledger: world.ledger, now: expectedAt)
            #expect(again.isEmpty, "\(scenario.name): still due after posting: \(again)")
        }
        let reference = world.balances

        // Any order, with duplicates: each delivered no earlier than everything before it.
        var random = SplitMix64(state: file.utf8.reduce(14_695_981_039_346_656_037) { ($0 ^ UInt64($1)) &* 1_099_511_628_211 })
        for run in 0..<100 {
            var shuffled = deliveries.shuffled(using: &random)
            for _ in 0..<Int.random(in: 0...deliveries.count, using: &random) {
                shuffled.insert(deliveries.randomElement(using: &random)!, at: Int.random(in: 0...shuffled.count, using: &random))
            }
            var world = ScenarioWorld(catalogue: catalogue)
            var clock = Date.distantPast
            for (delivery, at) in shuffled {
                clock = max(clock, at)
                world.deliver(delivery, now: clock)
            }
            world.settleAll(now: max(clock, expectedAt))
            try Self.check(world, against: scenario, order: "shuffle \(run)")
            #expect(world.balances == reference, "\(scenario.name), shuffle \(run): bucket balances differ from the in-order run")
            await Task.yield()
        }
    }

    static func check(_ world: ScenarioWorld, against scenario: Scenario, order: String) throws {
        let expect = scenario.expect
        let now = Scenario.date(expect.at)
        let standing = world.standing(of: scenario.account(expect.account), now: now)
        let (status, credits, subscriptions) = (standing.status, standing.credits, standing.subscriptions)
        let label = "\(scenario.name) (\(order))"
        #expect(status.state.rawValue == expect.state, "\(label): state")
        #expect(status.entitled == expect.entitled, "\(label): entitled")
        #expect(credits.tier == expect.tier ?? (expect.entitled ? nil : "free"), "\(label): tier")
        if let product = expect.product { #expect(status.subscription?.productId == product, "\(label): product") }
        if let expected = expect.status { #expect(status.subscription?.status.rawValue == expected, "\(label): stored status") }
        if let reason = expect.endReason { #expect(status.subscription?.endReason?.text == reason, "\(label): end reason") }
        if let expires = expect.expiresAt { #expect(status.subscription?.expiresAt == Scenario.date(expires), "\(label): expiresAt") }
        if let willRenew = expect.willRenew { #expect(status.subscription?.willRenew == willRenew, "\(label): willRenew") }
        for (meter, remaining) in expect.credits {
            #expect(credits.meters[meter]?.remaining == remaining, "\(label): \(meter) remaining")
        }
        for (meter, topUp) in expect.topUp ?? [:] {
            #expect(credits.meters[meter]?.topUp == topUp, "\(label): \(meter) top-up")
        }
        for alias in expect.ownsNothing ?? [] {
            let owned = world.derivations().filter { $0.state.accountId == scenario.account(alias) }
            #expect(owned.isEmpty, "\(label): account \(alias) must own nothing")
        }
        if let sources = expect.sources {
            #expect(standing.entitlements.entitling.map(\.kind.text).sorted() == sources.sorted(), "\(label): entitling sources")
        }
        if let plan = expect.billingPlan { #expect(status.subscription?.billingPlan.text == plan, "\(label): billingPlan") }
        if let expected = expect.commitment {
            let commitment = status.subscription?.commitment
            #expect(commitment?.period == expected.period, "\(label): commitment period")
            #expect(commitment?.of == expected.of, "\(label): commitment of")
            #expect(commitment?.endsAt == Scenario.date(expected.endsAt), "\(label): commitment endsAt")
            #expect(commitment?.renewsTo == expected.renewsTo, "\(label): commitment renewsTo")
            #expect(commitment?.priceAfter == expected.priceAfter, "\(label): commitment priceAfter")
        }
        if let offers = expect.winBackOfferIds { #expect(status.subscription?.winBackOfferIds == offers, "\(label): winBackOfferIds") }
        _ = subscriptions
    }

    /// Each event signed as Apple would sign it and verified as the intake verifies it.
    static func signedAndVerified(_ scenario: Scenario) async throws -> [(ScenarioWorld.Delivery, Date)] {
        let chain = try LocalSigningChain.generate()
        let signer = try JWSSigner(chain: chain)
        let verifier = SignedDataVerifier(
            rootCertificates: [chain.root],
            policy: VerificationPolicy(bundleId: scenario.bundleId, appAppleId: nil, environments: [.sandbox, .production]),
            clock: { Scenario.date(400) })
        var deliveries: [(ScenarioWorld.Delivery, Date)] = []
        for (index, event) in scenario.events.enumerated() {
            let transaction = scenario.payload(event)
            let at = Scenario.date(event.at)
            if let alias = event.claim {
                let verified = try await verifier.verifyTransaction(try signer.sign(transaction))
                let account = scenario.account(alias)
                if let claim = SubscriptionEvent(claimOf: verified, by: account) {
                    deliveries.append((.subscription(claim), at))
                } else {
                    deliveries.append((.oneTime(verified, account: account, notificationType: nil, signedDate: nil), at))
                }
            } else if let status = event.api {
                let verified = try await verifier.verifyTransaction(try signer.sign(transaction))
                let renewal = try await scenario.renewalPayload(event).asyncMap { try await verifier.verifyRenewalInfo(try signer.sign($0)) }
                deliveries.append((.subscription(SubscriptionEvent(serverStatus: status, transaction: verified, renewalInfo: renewal)), at))
            } else {
                let parts = (event.notification ?? "").split(separator: "/").map(String.init)
                let simulated = SimulatedEvent(
                    notificationType: parts.first ?? "", subtype: parts.count > 1 ? parts[1] : nil, status: event.status,
                    signedDate: Scenario.milliseconds(event.at), transaction: transaction, renewalInfo: scenario.renewalPayload(event))
                let notificationSigner = NotificationSigner(
                    signer: signer, bundleId: scenario.bundleId, environment: AppStoreEnvironment(rawValue: event.env ?? "Sandbox"))
                let uuid = UUID(uuidString: String(format: "00000000-0000-4000-8000-%012d", index))!
                let verified = try await verifier.verifyNotification(try notificationSigner.signedPayload(for: simulated, notificationUUID: uuid))
                if let subscriptionEvent = SubscriptionEvent(verified) {
                    deliveries.append((.subscription(subscriptionEvent), at))
                } else if let purchase = verified.transaction {
                    deliveries.append(
                        (
                            .oneTime(
                                purchase, account: purchase.appAccountToken.flatMap(AccountID.init),
                                notificationType: verified.payload.notificationType,
                                signedDate: verified.payload.signedDate),
                            at
                        ))
                }
            }
        }
        return deliveries
    }
}

extension Optional {
    func asyncMap<T>(_ transform: (Wrapped) async throws -> T) async rethrows -> T? {
        guard let self else { return nil }
        return try await transform(self)
    }
}
