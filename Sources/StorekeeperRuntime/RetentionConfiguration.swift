import Credits
import Entitlements
import Foundation
import Subscriptions

/// `STOREKEEPER_RETENTION`: the path of a YAML file, or the YAML itself, with the ordered rules that answer Apple's
/// Get Retention Message requests (docs/retention.md; an example ships as `config/retention.yml`):
///
/// ```yaml
/// deadline_ms: 300                   # optional, 20–400: answer the default after this long (Apple waits 700 ms)
/// default:                           # optional: without it, Apple shows its own default message
///   message: 6f0b1c7e-…              # a message identifier uploaded to Apple and approved
/// rules:
///   - name: idle_offer
///     when: { spent_share_below: 0.2, days_since_last_spend_at_least: 14, offers_given_below: 1 }
///     answer:
///       promotional_offer: { offer: pro_retain_50, message: 0b8e…-… }
/// ```
enum RetentionConfiguration {
    struct File: Decodable {
        var deadlineMs: Int?
        var `default`: Answer?
        var rules: [Rule]?

        enum CodingKeys: String, CodingKey {
            case deadlineMs = "deadline_ms"
            case `default`, rules
        }
    }

    struct Rule: Decodable {
        var name: String
        var when: Condition?
        var answer: Answer
    }

    struct Condition: Decodable {
        var products: [String]?
        var tiers: [String]?
        var spentShareAtLeast: Double?
        var spentShareBelow: Double?
        var daysSinceLastSpendAtLeast: Int?
        var daysSinceLastSpendBelow: Int?
        var neverSpent: Bool?
        var monthsSubscribedAtLeast: Int?
        var monthsSubscribedBelow: Int?
        var topUpsAtLeast: Int?
        var topUpsBelow: Int?
        var offersGivenAtLeast: Int?
        var offersGivenBelow: Int?

        enum CodingKeys: String, CodingKey, CaseIterable {
            case products, tiers
            case spentShareAtLeast = "spent_share_at_least", spentShareBelow = "spent_share_below"
            case daysSinceLastSpendAtLeast = "days_since_last_spend_at_least", daysSinceLastSpendBelow = "days_since_last_spend_below"
            case neverSpent = "never_spent"
            case monthsSubscribedAtLeast = "months_subscribed_at_least", monthsSubscribedBelow = "months_subscribed_below"
            case topUpsAtLeast = "top_ups_at_least", topUpsBelow = "top_ups_below"
            case offersGivenAtLeast = "offers_given_at_least", offersGivenBelow = "offers_given_below"
        }
    }

    struct Answer: Decodable {
        var message: String?
        var alternateProduct: AlternateProduct?
        var promotionalOffer: Offer?

        enum CodingKeys: String, CodingKey, CaseIterable {
            case message
            case alternateProduct = "alternate_product"
            case promotionalOffer = "promotional_offer"
        }
    }

    struct AlternateProduct: Decodable {
        var product: String
        var message: String
        var billingPlan: String?

        enum CodingKeys: String, CodingKey {
            case product, message
            case billingPlan = "billing_plan"
        }
    }

    struct Offer: Decodable {
        var offer: String
        var message: String
    }

    static let answerKeys = ConfigurationKeys.object([
        "message": .value,
        "alternate_product": .object(["product": .value, "message": .value, "billing_plan": .value]),
        "promotional_offer": .object(["offer": .value, "message": .value]),
    ])

    static let keys = ConfigurationKeys.object([
        "deadline_ms": .value,
        "default": answerKeys,
        "rules": .list(
            .object([
                "name": .value, "answer": answerKeys,
                "when": .object(Dictionary(uniqueKeysWithValues: Condition.CodingKeys.allCases.map { ($0.rawValue, ConfigurationKeys.value) })),
            ])),
    ])

    /// The policy `value` describes, checked against the catalogue and the offers, or every problem found.
    /// - Parameter canSign: whether the In-App Purchase key is configured (promotional offers need it).
    static func policy(
        from value: String, catalogue: TierCatalogue, offers: [PromotionalOffer], canSign: Bool
    ) throws(ConfigurationError) -> RetentionPolicy {
        let place = "STOREKEEPER_RETENTION"
        let file = try YAMLSetting.decode(File.self, from: value, place: place, keys: keys)
        var problems: [String] = []
        var rules: [RetentionPolicy.Rule] = []
        var names: Set<String> = []
        for (index, rule) in (file.rules ?? []).enumerated() {
            let at = "\(place): rules.\(index)"
            if rule.name.isEmpty || rule.name.utf8.count > 64
                || !rule.name.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || "_-.".contains($0)) })
            {
                problems.append("\(at).name must be 1–64 letters, digits, _ - or ., got \"\(rule.name)\"")
            } else if rule.name == RetentionPolicy.defaultRule {
                problems.append("\(at).name \"default\" names the answer given when no rule holds")
            } else if !names.insert(rule.name).inserted {
                problems.append("\(at).name \"\(rule.name)\" is listed twice")
            }
            let condition = self.condition(rule.when, at: "\(at).when", catalogue: catalogue, problems: &problems)
            guard
                let answer = self.answer(rule.answer, at: "\(at).answer", catalogue: catalogue, offers: offers, canSign: canSign, problems: &problems)
            else { continue }
            rules.append(RetentionPolicy.Rule(name: rule.name, condition: condition, answer: answer))
        }
        var fallback: RetentionPolicy.Answer?
        if let answer = file.default {
            fallback = self.answer(answer, at: "\(place): default", catalogue: catalogue, offers: offers, canSign: canSign, problems: &problems)
            if case .promotionalOffer = fallback {
                problems.append(
                    "\(place): default must be a message or an alternate_product: it is answered when the database cannot sign an offer once per account"
                )
            }
        }
        let deadline = file.deadlineMs ?? 300
        if !(20...400).contains(deadline) {
            problems.append(
                "\(place): deadline_ms must be 20–400: Apple stops waiting at 700 ms, and a decision committing at the deadline is given 250 ms more, got \(deadline)"
            )
        }
        guard problems.isEmpty else { throw ConfigurationError(problems: problems) }
        return RetentionPolicy(rules: rules, fallback: fallback, deadline: .milliseconds(deadline))
    }

    static func condition(
        _ when: Condition?, at place: String, catalogue: TierCatalogue, problems: inout [String]
    ) -> RetentionPolicy.Condition {
        var condition = RetentionPolicy.Condition()
        guard let when else { return condition }
        if let products = when.products {
            for product in products where !isAppStoreSubscription(product, catalogue) {
                problems.append("\(place).products: \"\(product)\" is not an App Store subscription product of the tier catalogue")
            }
            condition.products = Set(products)
        }
        if let tiers = when.tiers {
            for tier in tiers where catalogue.tier(id: tier) == nil { problems.append("\(place).tiers: \"\(tier)\" is not a tier of the catalogue") }
            condition.tiers = Set(tiers)
        }
        for share in [when.spentShareAtLeast, when.spentShareBelow].compactMap({ $0 }) where !(0...1).contains(share) {
            problems.append("\(place): a spent share is a fraction 0–1 (0.2 is a fifth of the allowance), got \(share)")
        }
        for count in [
            when.daysSinceLastSpendAtLeast, when.daysSinceLastSpendBelow, when.monthsSubscribedAtLeast, when.monthsSubscribedBelow,
            when.topUpsAtLeast, when.topUpsBelow, when.offersGivenAtLeast, when.offersGivenBelow,
        ].compactMap({ $0 }) where count < 0 {
            problems.append("\(place): counts and days are 0 or more, got \(count)")
        }
        let pairs: [(String, Double?, Double?)] = [
            ("spent_share", when.spentShareAtLeast, when.spentShareBelow),
            ("days_since_last_spend", when.daysSinceLastSpendAtLeast.map(Double.init), when.daysSinceLastSpendBelow.map(Double.init)),
            ("months_subscribed", when.monthsSubscribedAtLeast.map(Double.init), when.monthsSubscribedBelow.map(Double.init)),
            ("top_ups", when.topUpsAtLeast.map(Double.init), when.topUpsBelow.map(Double.init)),
            ("offers_given", when.offersGivenAtLeast.map(Double.init), when.offersGivenBelow.map(Double.init)),
        ]
        for (name, atLeast, below) in pairs {
            if let atLeast, let below, atLeast >= below {
                problems.append("\(place): \(name)_at_least must be below \(name)_below, or the rule never holds")
            }
        }
        if when.neverSpent == true, when.daysSinceLastSpendAtLeast != nil || when.daysSinceLastSpendBelow != nil {
            problems.append("\(place): never_spent: true with a days_since_last_spend bound never holds (a customer who never spent has no days)")
        }
        condition.spentShare = .init(atLeast: when.spentShareAtLeast, below: when.spentShareBelow)
        condition.daysSinceLastSpend = .init(atLeast: when.daysSinceLastSpendAtLeast, below: when.daysSinceLastSpendBelow)
        condition.neverSpent = when.neverSpent
        condition.monthsSubscribed = .init(atLeast: when.monthsSubscribedAtLeast, below: when.monthsSubscribedBelow)
        condition.topUpsBought = .init(atLeast: when.topUpsAtLeast, below: when.topUpsBelow)
        condition.offersGiven = .init(atLeast: when.offersGivenAtLeast, below: when.offersGivenBelow)
        return condition
    }

    /// Apple can only name its own products: a Stripe price or a Play product is no answer to it.
    static func isAppStoreSubscription(_ product: String, _ catalogue: TierCatalogue) -> Bool {
        guard let found = catalogue.tier(ofProduct: product)?.product else { return false }
        return found.type == .autoRenewable && found.store == .appStore
    }

    static func answer(
        _ answer: Answer, at place: String, catalogue: TierCatalogue, offers: [PromotionalOffer], canSign: Bool, problems: inout [String]
    ) -> RetentionPolicy.Answer? {
        let given = [answer.message != nil, answer.alternateProduct != nil, answer.promotionalOffer != nil].filter { $0 }.count
        guard given == 1 else {
            problems.append("\(place) must be exactly one of message, alternate_product, promotional_offer")
            return nil
        }
        func message(_ text: String, _ at: String) -> String? {
            guard let id = UUID(text: text) else {
                problems.append("\(at) must be the UUID of a message uploaded to Apple, got \"\(text)\"")
                return nil
            }
            return id.lowercasedText
        }
        if let text = answer.message {
            return message(text, "\(place).message").map { .message(messageIdentifier: $0) }
        }
        if let alternate = answer.alternateProduct {
            if !isAppStoreSubscription(alternate.product, catalogue) {
                problems.append(
                    "\(place).alternate_product.product \"\(alternate.product)\" is not an App Store subscription product of the tier catalogue")
            }
            if let plan = alternate.billingPlan, !["BILLED_UPFRONT", "MONTHLY"].contains(plan) {
                problems.append("\(place).alternate_product.billing_plan must be BILLED_UPFRONT or MONTHLY, got \"\(plan)\"")
            }
            return message(alternate.message, "\(place).alternate_product.message").map {
                .alternateProduct(messageIdentifier: $0, productId: alternate.product, billingPlanType: alternate.billingPlan)
            }
        }
        guard let promotional = answer.promotionalOffer else { return nil }
        guard let offer = offers.first(where: { $0.id == promotional.offer }) else {
            problems.append("\(place).promotional_offer.offer \"\(promotional.offer)\" is not an offer of STOREKEEPER_OFFERS")
            return nil
        }
        if !canSign {
            problems.append(
                "\(place).promotional_offer needs the In-App Purchase key to sign it: set STOREKEEPER_ASSA_ISSUER_ID, _KEY_ID and _PRIVATE_KEY")
        }
        return message(promotional.message, "\(place).promotional_offer.message").map {
            .promotionalOffer(messageIdentifier: $0, offer: offer, group: catalogue.tier(ofProduct: offer.productId)?.tier.group)
        }
    }
}
