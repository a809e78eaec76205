import Foundation

/// What Storekeeper knows of a customer when Apple asks for a retention message, read from stored facts at the
/// moment of the request (``RetentionPolicy/decide(_:)`` chooses from it).
public struct RetentionFacts: Sendable, Equatable {
    /// The product Apple says the customer is looking at.
    public var productId: String
    /// Whether the subscription has an account: a promotional offer is signed for an account, once per account.
    public var accountKnown: Bool
    /// The tier the subscription's product sells, and its subscription group (`nil`: not in the catalogue).
    public var tier: String?
    public var group: String?
    /// The largest share of a meter's allowance spent in the billing period in force, 0…1 (`nil`: the period
    /// credited nothing).
    public var spentShare: Double?
    /// Whole days since the account last spent credits (`nil`: it never did).
    public var daysSinceLastSpend: Int?
    /// Calendar months since Storekeeper first saw the subscription (its earliest notification, or when it was stored).
    public var monthsSubscribed: Int
    /// Top-up purchases the account made.
    public var topUpsBought: Int
    /// Promotional offers signed for the account (by `POST /v1/offers/promotional` or a retention answer), by id.
    public var offersSigned: [String: Int]
    /// Offers the account may not have (``OfferEligibility``: audience, once per account, redeemed), found while
    /// answering: a rule offering one does not answer.
    public var ineligibleOffers: Set<String> = []

    public init(
        productId: String, accountKnown: Bool = true, tier: String?, group: String?, spentShare: Double?, daysSinceLastSpend: Int?,
        monthsSubscribed: Int,
        topUpsBought: Int, offersSigned: [String: Int]
    ) {
        self.productId = productId
        self.accountKnown = accountKnown
        self.tier = tier
        self.group = group
        self.spentShare = spentShare
        self.daysSinceLastSpend = daysSinceLastSpend
        self.monthsSubscribed = monthsSubscribed
        self.topUpsBought = topUpsBought
        self.offersSigned = offersSigned
    }

    /// Offers signed for the account, all ids together.
    public var offersGiven: Int { offersSigned.values.reduce(0, +) }
}

/// `STOREKEEPER_RETENTION`: an ordered list of rules, each a condition on ``RetentionFacts`` and the answer to give
/// when it holds; the first rule that holds and can be answered decides (docs/retention.md).
public struct RetentionPolicy: Sendable, Equatable {
    /// What to show the customer. Every answer names a message uploaded to Apple and approved.
    public enum Answer: Sendable, Equatable {
        case message(messageIdentifier: String)
        case alternateProduct(messageIdentifier: String, productId: String, billingPlanType: String?)
        /// `group`: the offer's product's subscription group; the offer is only for subscribers of that group.
        case promotionalOffer(messageIdentifier: String, offer: PromotionalOffer, group: String?)
    }

    /// A half-open range: `atLeast ≤ value < below`, either end optional.
    public struct Bounds<Value: Comparable & Sendable>: Sendable, Equatable {
        public var atLeast: Value?
        public var below: Value?

        public init(atLeast: Value? = nil, below: Value? = nil) {
            self.atLeast = atLeast
            self.below = below
        }

        /// Whether `value` lies inside; an unknown value lies inside only bounds that say nothing.
        func contains(_ value: Value?) -> Bool {
            if atLeast == nil && below == nil { return true }
            guard let value else { return false }
            if let atLeast, value < atLeast { return false }
            if let below, value >= below { return false }
            return true
        }
    }

    /// The facts a rule asks for; a condition left out holds for everyone.
    public struct Condition: Sendable, Equatable {
        public var products: Set<String>?
        public var tiers: Set<String>?
        public var spentShare = Bounds<Double>()
        /// A customer who never spent has no value: only a rule with `never_spent: true`, or without this bound,
        /// matches them.
        public var daysSinceLastSpend = Bounds<Int>()
        public var neverSpent: Bool?
        public var monthsSubscribed = Bounds<Int>()
        public var topUpsBought = Bounds<Int>()
        public var offersGiven = Bounds<Int>()

        public init() {}

        public func holds(for facts: RetentionFacts) -> Bool {
            if let products, !products.contains(facts.productId) { return false }
            if let tiers, !tiers.contains(facts.tier ?? "") { return false }
            if let neverSpent, neverSpent != (facts.daysSinceLastSpend == nil) { return false }
            return spentShare.contains(facts.spentShare) && daysSinceLastSpend.contains(facts.daysSinceLastSpend)
                && monthsSubscribed.contains(facts.monthsSubscribed) && topUpsBought.contains(facts.topUpsBought)
                && offersGiven.contains(facts.offersGiven)
        }
    }

    public struct Rule: Sendable, Equatable {
        public var name: String
        public var condition: Condition
        public var answer: Answer

        public init(name: String, condition: Condition, answer: Answer) {
            self.name = name
            self.condition = condition
            self.answer = answer
        }
    }

    /// The decision: which rule answered (`default` when none did) and the answer.
    public struct Decision: Sendable, Equatable {
        public var rule: String
        public var answer: Answer?
    }

    public static let defaultRule = "default"

    public var rules: [Rule]
    /// The answer when no rule holds, when the subscription is unknown, or when deciding fails or runs late; `nil`
    /// answers an error so that Apple shows its own default message.
    public var fallback: Answer?
    /// How long deciding may take before the fallback is answered: Apple stops waiting at 700 ms in Production.
    public var deadline: Duration

    public init(rules: [Rule], fallback: Answer?, deadline: Duration = .milliseconds(300)) {
        self.rules = rules
        self.fallback = fallback
        self.deadline = deadline
    }

    /// The first rule that holds and whose answer can be given to this customer: a promotional offer only to
    /// subscribers of its group, and an offer given once per account only if it was never signed for it.
    public func decide(_ facts: RetentionFacts) -> Decision {
        for rule in rules where rule.condition.holds(for: facts) && Self.canGive(rule.answer, to: facts) {
            return Decision(rule: rule.name, answer: rule.answer)
        }
        return Decision(rule: Self.defaultRule, answer: fallback)
    }

    static func canGive(_ answer: Answer, to facts: RetentionFacts) -> Bool {
        switch answer {
        case .message: return true
        case .alternateProduct(_, let productId, _): return productId != facts.productId
        case .promotionalOffer(_, let offer, let group):
            if !facts.accountKnown || group != facts.group || facts.ineligibleOffers.contains(offer.id) { return false }
            return !offer.oncePerAccount || (facts.offersSigned[offer.id] ?? 0) == 0
        }
    }
}
