import Entitlements

extension TierCatalogue {
    /// Every problem of the catalogue, each a line naming where it is; empty when it is valid.
    public func problems() -> [String] {
        var problems: [String] = []
        let meterIds = Set(meters.map(\.id))
        if meters.isEmpty { problems.append("meters: define at least one meter") }
        for (id, count) in Dictionary(meters.map { ($0.id, 1) }, uniquingKeysWith: +) where count > 1 {
            problems.append("meters: \(id) is defined \(count) times")
        }
        // Ids are parts of ledger and bucket keys, where `:` separates the parts.
        for id in meters.map(\.id) where !Self.isKeyPart(id) {
            problems.append("meters: \(id) must be 1–64 characters without `:`, spaces or control characters")
        }
        for id in tiers.map(\.id) where !Self.isKeyPart(id) {
            problems.append("tiers: \(id) must be 1–64 characters without `:`, spaces or control characters")
        }
        for meter in meters {
            for case .unknown(let value) in meter.warnAt {
                problems.append("meters.\(meter.id).warn_at: \(value) is neither a share below 1 nor a whole number of credits")
            }
        }
        problems += Self.problems(of: free.allowances, at: "free", meters: meterIds)
        if tiers.isEmpty { problems.append("tiers: define at least one paid tier") }
        var productOwners: [String: String] = [:]
        var levels: [Int: String] = [:]
        for tier in tiers {
            let place = "tiers.\(tier.id)"
            // Sold tiers mirror Apple's subscription-group levels (1 is the highest); a tier only grants entitle may
            // sit above them all at 0.
            if tier.level < (tier.grantableOnly ? 0 : 1) {
                problems.append("\(place).level must be 1 or more (1 is Apple's highest level; 0 only for grantable_only tiers)")
            }
            if let other = levels[tier.level] { problems.append("\(place).level \(tier.level) is also the level of \(other)") }
            levels[tier.level] = tier.id
            if tier.products.isEmpty, !tier.grantableOnly {
                problems.append("\(place).products: list at least one product (or set grantable_only: true for a tier only grants entitle)")
            }
            if tier.grantableOnly, !tier.products.isEmpty { problems.append("\(place): a grantable_only tier sells no products") }
            if !Self.isKeyPart(tier.group) { problems.append("\(place).group must be 1–64 characters without `:`, spaces or control characters") }
            for product in tier.products {
                if let owner = productOwners[product.id] { problems.append("\(place): product \(product.id) is also listed by \(owner)") }
                productOwners[product.id] = place
                problems += Self.problems(of: product, at: "\(place).products.\(product.id)")
            }
            problems += Self.problems(of: tier.allowances, at: place, meters: meterIds)
            problems += self.problems(ofFeatures: tier.features, at: place)
        }
        problems += self.problems(ofFeatures: free.features, at: "free")
        if case .unknown(let policy) = upgradeCredits { problems.append("upgrade_credits \(policy) is not prorate or fresh") }
        problems += featureDefinitionProblems()
        for topUp in topUps {
            let place = "top_ups.\(topUp.id)"
            if let owner = productOwners[topUp.id] { problems.append("\(place): product is also listed by \(owner)") }
            productOwners[topUp.id] = place
            if !meterIds.contains(topUp.meter) { problems.append("\(place).meter \(topUp.meter) is not a defined meter") }
            if topUp.credits <= 0 { problems.append("\(place).credits must be positive") }
            if topUp.store == .stripe, !topUp.id.hasPrefix("price_") {
                problems.append("\(place): a stripe top-up is named by its Stripe price id (price_…)")
            }
            if topUp.store == .googlePlay, !Self.isPlayProductId(topUp.id) {
                problems.append("\(place): a google_play top-up is named by its product id (lowercase letters, digits, _ and .)")
            }
            if case .unknown(let store) = topUp.store { problems.append("\(place).store \(store) is not app_store, stripe or google_play") }
            if topUp.store == .operatorGrant { problems.append("\(place).store operator is not app_store, stripe or google_play") }
        }
        return problems
    }

    /// A product's type and the period or duration it needs.
    static func problems(of product: Product, at place: String) -> [String] {
        var problems: [String] = []
        let periods = "one of P<n>D, P<n>W, P<n>M, P<n>Y"
        switch product.type {
        case .autoRenewable:
            if product.billingPeriod == nil { problems.append("\(place).period \"\(product.period ?? "")\" is not \(periods)") }
            if product.duration != nil { problems.append("\(place).duration is for non_renewing products; an auto-renewable one has a period") }
        case .lifetime:
            if product.period != nil || product.duration != nil { problems.append("\(place): a lifetime product has neither period nor duration") }
        case .nonRenewing:
            if let duration = product.duration {
                if product.entitlementDuration == nil { problems.append("\(place).duration \"\(duration)\" is not \(periods)") }
            } else {
                problems.append("\(place): a non_renewing product needs a duration (\(periods)): Apple's transaction carries no expiry")
            }
            if product.period != nil { problems.append("\(place).period is for auto_renewable products; a non_renewing one has a duration") }
        case .unknown(let type):
            problems.append("\(place).type \(type) is not one of auto_renewable, lifetime, non_renewing")
        }
        if product.price <= 0 { problems.append("\(place).price must be positive milliunits") }
        switch product.store {
        case .appStore: break
        case .stripe:
            if !product.id.hasPrefix("price_") { problems.append("\(place): a stripe product is named by its Stripe price id (price_…)") }
            if product.type == .nonRenewing {
                problems.append("\(place): Stripe sells subscriptions and one-time (lifetime) prices, not non_renewing passes")
            }
        case .googlePlay:
            problems += googlePlayProblems(of: product, at: place)
        case .operatorGrant, .unknown:
            problems.append("\(place).store \(product.store.text) is not app_store, stripe or google_play")
        }
        return problems
    }

    /// Play Console's rule for a product id: lowercase letters, digits, `_` and `.`, starting with a letter or digit.
    static func isPlayProductId(_ id: String) -> Bool {
        !id.isEmpty && id.utf8.count <= 140 && id.first.map { $0.isASCII && ($0.isLowercase || $0.isNumber) } == true
            && id.allSatisfy { $0.isASCII && ($0.isLowercase || $0.isNumber || $0 == "_" || $0 == ".") }
    }

    /// Play names a subscription's product `<productId>/<basePlanId>` (the base plan decides the period and price) and
    /// a one-time product (a lifetime unlock, a pass, a top-up) by its product id. Play Console's rules: a product id starts with a lowercase letter or a digit
    /// and holds lowercase letters, digits, `_` and `.`; a base plan id holds lowercase letters, digits and `-`, at most
    /// 63 characters.
    static func googlePlayProblems(of product: Product, at place: String) -> [String] {
        let parts = product.id.split(separator: "/", omittingEmptySubsequences: false).map(String.init)
        let productIdOK = parts.first.map { Self.isPlayProductId($0) } ?? false
        let basePlanOK = { (id: String) in
            !id.isEmpty && id.utf8.count <= 63 && id.first.map { $0.isASCII && ($0.isLowercase || $0.isNumber) } == true
                && id.allSatisfy { $0.isASCII && ($0.isLowercase || $0.isNumber || $0 == "-") }
        }
        switch product.type {
        case .autoRenewable:
            guard parts.count == 2, productIdOK, basePlanOK(parts[1]) else {
                return [
                    "\(place): a google_play subscription is named <productId>/<basePlanId> (lowercase letters, digits, _ and . / lowercase letters, digits and -)"
                ]
            }
        case .nonRenewing:
            // A pass is a one-time product's rental purchase option: Play reads no expiry for it, so the catalogue's
            // duration (the rental period set in Play Console) decides, as for Apple's non-renewing subscriptions.
            guard parts.count == 1, productIdOK else {
                return [
                    "\(place): a google_play pass (a one-time product's rental option) is named by its product id; Play's prepaid plans are base plans of a subscription"
                ]
            }
        default:
            guard parts.count == 1, productIdOK else {
                return ["\(place): a google_play one-time product is named by its product id (lowercase letters, digits, _ and .)"]
            }
        }
        return []
    }

    /// The feature definitions: unique ids, known types, levels for a level feature, a default that fits.
    func featureDefinitionProblems() -> [String] {
        var problems: [String] = []
        var seen = Set<String>()
        for definition in featureDefinitions {
            let place = "feature_definitions.\(definition.id)"
            if !seen.insert(definition.id).inserted { problems.append("\(place) is defined twice") }
            if !Self.isKeyPart(definition.id) {
                problems.append("\(place): the id must be 1–64 characters without `:`, spaces or control characters")
            }
            switch definition.type {
            case .level:
                let levels = definition.levels ?? []
                if levels.isEmpty { problems.append("\(place).levels: list the levels, lowest first") }
                if Set(levels).count != levels.count { problems.append("\(place).levels names a level twice") }
            case .unknown(let type):
                problems.append("\(place).type \(type) is not one of boolean, number, text, level")
                continue
            default:
                if definition.levels != nil { problems.append("\(place).levels is for level features") }
            }
            if let value = definition.defaultValue, case .failure(let problem) = definition.value(of: value) {
                problems.append("\(place).default: \(problem)")
            }
        }
        return problems
    }

    /// A tier's feature values: each names a defined feature and fits its type.
    func problems(ofFeatures features: [String: String], at place: String) -> [String] {
        var problems: [String] = []
        for (id, value) in features.sorted(by: { $0.key < $1.key }) {
            guard let definition = featureDefinitions.first(where: { $0.id == id }) else {
                let known = featureDefinitions.map(\.id).joined(separator: ", ")
                problems.append("\(place).features.\(id) is not a defined feature (feature_definitions: \(known.isEmpty ? "none" : known))")
                continue
            }
            if case .failure(let problem) = definition.value(of: value) { problems.append("\(place).features.\(id): \(problem)") }
        }
        return problems
    }

    /// What loads but should be written otherwise: `features` lists of bullets (now `highlights`).
    public func warnings() -> [String] {
        var warnings: [String] = []
        if free.featuresWereBullets {
            warnings.append("free.features is a list of bullets: it is read as free.highlights; rename it, features now holds typed feature values")
        }
        for tier in tiers where tier.featuresWereBullets {
            warnings.append(
                "tiers.\(tier.id).features is a list of bullets: it is read as highlights; rename it, features now holds typed feature values")
        }
        return warnings
    }

    static func problems(of allowances: [String: Allowance], at place: String, meters: Set<String>) -> [String] {
        var problems: [String] = []
        for (meter, allowance) in allowances.sorted(by: { $0.key < $1.key }) {
            let here = "\(place).allowances.\(meter)"
            if !meters.contains(meter) { problems.append("\(here): \(meter) is not a defined meter") }
            let kinds = [allowance.perCycle != nil, allowance.perDay != nil, allowance.isUnlimited].filter { $0 }.count
            if kinds != 1 { problems.append("\(here): set exactly one of per_cycle, per_day, unlimited: true") }
            for (name, value) in [("per_cycle", allowance.perCycle), ("per_day", allowance.perDay), ("trial_cap", allowance.trialCap)] {
                if let value, value < 0 { problems.append("\(here).\(name) must not be negative") }
            }
            if let cap = allowance.trialCap {
                if allowance.perCycle == nil { problems.append("\(here).trial_cap needs per_cycle") }
                if let perCycle = allowance.perCycle, cap > perCycle { problems.append("\(here).trial_cap \(cap) is above per_cycle \(perCycle)") }
            }
        }
        return problems
    }

    /// Whether `id` can be one `:`-separated part of a key.
    static func isKeyPart(_ id: String) -> Bool {
        !id.isEmpty && id.count <= 64
            && !id.unicodeScalars.contains { $0 == ":" || $0.properties.isWhitespace || $0.properties.generalCategory == .control }
    }
}
