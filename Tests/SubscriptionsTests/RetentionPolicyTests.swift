import Subscriptions
import Testing

/// The retention policy's choice, rule by rule, from facts written as a customer's month would leave them.
@Suite("Retention policy")
struct RetentionPolicyTests {
    static let retain = PromotionalOffer(id: "retain", productId: "pro.monthly", audience: .active, oncePerAccount: true)
    static let stay = PromotionalOffer(id: "stay", productId: "pro.monthly", audience: .active, oncePerAccount: false)

    static func facts(
        product: String = "pro.monthly", account: Bool = true, tier: String? = "pro", group: String? = "default", share: Double? = 0,
        idle: Int? = nil, months: Int = 0, topUps: Int = 0, signed: [String: Int] = [:]
    ) -> RetentionFacts {
        RetentionFacts(
            productId: product, accountKnown: account, tier: tier, group: group, spentShare: share, daysSinceLastSpend: idle,
            monthsSubscribed: months, topUpsBought: topUps, offersSigned: signed)
    }

    static func rule(_ name: String, _ answer: RetentionPolicy.Answer, _ build: (inout RetentionPolicy.Condition) -> Void = { _ in })
        -> RetentionPolicy.Rule
    {
        var condition = RetentionPolicy.Condition()
        build(&condition)
        return RetentionPolicy.Rule(name: name, condition: condition, answer: answer)
    }

    static let fallback = RetentionPolicy.Answer.message(messageIdentifier: "default")

    @Test("bounds are half-open: at_least holds at the value, below does not; an unknown value meets only empty bounds")
    func bounds() {
        let policy = RetentionPolicy(
            rules: [Self.rule("low", .message(messageIdentifier: "m")) { $0.spentShare = .init(atLeast: 0.2, below: 0.5) }],
            fallback: Self.fallback)
        #expect(policy.decide(Self.facts(share: 0.2)).rule == "low")
        #expect(policy.decide(Self.facts(share: 0.4999)).rule == "low")
        #expect(policy.decide(Self.facts(share: 0.5)).rule == "default")
        #expect(policy.decide(Self.facts(share: 0.1999)).rule == "default")
        // A period that credited nothing has no share: a rule about shares does not hold.
        #expect(policy.decide(Self.facts(share: nil)).rule == "default")
        #expect(policy.decide(Self.facts(share: nil)).answer == Self.fallback)
    }

    @Test("days since the last spend: a customer who never spent matches only never_spent or no bound")
    func neverSpent() {
        let policy = RetentionPolicy(
            rules: [
                Self.rule("idle", .message(messageIdentifier: "i")) { $0.daysSinceLastSpend = .init(atLeast: 14) },
                Self.rule("never", .message(messageIdentifier: "n")) { $0.neverSpent = true },
            ],
            fallback: nil)
        #expect(policy.decide(Self.facts(idle: 14)).rule == "idle")
        #expect(policy.decide(Self.facts(idle: 13)).rule == "default")
        #expect(policy.decide(Self.facts(idle: nil)).rule == "never")
        #expect(policy.decide(Self.facts(idle: 13)).answer == nil)
    }

    @Test("the first rule that holds answers; products, tiers, months, top-ups and offers given each narrow it")
    func order() {
        let policy = RetentionPolicy(
            rules: [
                Self.rule("loyal", .message(messageIdentifier: "l")) {
                    $0.monthsSubscribed = .init(atLeast: 12)
                    $0.tiers = ["pro"]
                },
                Self.rule("buyer", .message(messageIdentifier: "b")) { $0.topUpsBought = .init(atLeast: 1) },
                Self.rule("annual", .alternateProduct(messageIdentifier: "a", productId: "pro.annual", billingPlanType: nil)) {
                    $0.products = ["pro.monthly"]
                    $0.offersGiven = .init(below: 2)
                },
            ],
            fallback: Self.fallback)
        #expect(policy.decide(Self.facts(months: 12, topUps: 3)).rule == "loyal")
        #expect(policy.decide(Self.facts(tier: "max", months: 12, topUps: 3)).rule == "buyer")
        #expect(policy.decide(Self.facts(months: 11)).rule == "annual")
        #expect(policy.decide(Self.facts(months: 11, signed: ["a": 1, "b": 1])).rule == "default")
        #expect(policy.decide(Self.facts(product: "max.monthly", tier: "max")).rule == "default")
    }

    @Test("a plan switch is never to the plan the customer has")
    func alternateIsAnotherPlan() {
        let policy = RetentionPolicy(
            rules: [Self.rule("annual", .alternateProduct(messageIdentifier: "a", productId: "pro.annual", billingPlanType: "MONTHLY"))],
            fallback: Self.fallback)
        #expect(policy.decide(Self.facts(product: "pro.annual")).rule == "default")
        #expect(policy.decide(Self.facts()).answer == .alternateProduct(messageIdentifier: "a", productId: "pro.annual", billingPlanType: "MONTHLY"))
    }

    @Test("a promotional offer: only to an account, in its group, and once per account when so configured")
    func promotional() {
        let policy = RetentionPolicy(
            rules: [
                Self.rule("retain", .promotionalOffer(messageIdentifier: "r", offer: Self.retain, group: "default")),
                Self.rule("stay", .promotionalOffer(messageIdentifier: "s", offer: Self.stay, group: "default")),
            ],
            fallback: Self.fallback)
        #expect(policy.decide(Self.facts()).rule == "retain")
        #expect(policy.decide(Self.facts(signed: ["retain": 1])).rule == "stay")
        #expect(policy.decide(Self.facts(signed: ["retain": 1, "stay": 5])).rule == "stay")
        #expect(policy.decide(Self.facts(account: false)).rule == "default")
        #expect(policy.decide(Self.facts(group: "teams")).rule == "default")
        #expect(policy.decide(Self.facts(tier: nil, group: nil)).rule == "default")
    }
}
