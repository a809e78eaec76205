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
        for id in meters.map(\.id) where !Self.isKeyPart(id) { problems.append("meters: \(id) must be 1–64 characters without `:`, spaces or control characters") }
        for id in tiers.map(\.id) where !Self.isKeyPart(id) { problems.append("tiers: \(id) must be 1–64 characters without `:`, spaces or control characters") }
        problems += Self.problems(of: free.allowances, at: "free", meters: meterIds)
        if tiers.isEmpty { problems.append("tiers: define at least one paid tier") }
        var productOwners: [String: String] = [:]
        var levels: [Int: String] = [:]
        for tier in tiers {
            let place = "tiers.\(tier.id)"
            if tier.level < 1 { problems.append("\(place).level must be 1 or more (1 is Apple's highest level)") }
            if let other = levels[tier.level] { problems.append("\(place).level \(tier.level) is also the level of \(other)") }
            levels[tier.level] = tier.id
            if tier.products.isEmpty { problems.append("\(place).products: list at least one product") }
            for product in tier.products {
                if let owner = productOwners[product.id] { problems.append("\(place): product \(product.id) is also listed by \(owner)") }
                productOwners[product.id] = place
                if product.billingPeriod == nil {
                    problems.append("\(place).products.\(product.id).period \"\(product.period)\" is not one of P<n>D, P<n>W, P<n>M, P<n>Y")
                }
                if product.price <= 0 { problems.append("\(place).products.\(product.id).price must be positive milliunits") }
            }
            problems += Self.problems(of: tier.allowances, at: place, meters: meterIds)
        }
        for topUp in topUps {
            let place = "top_ups.\(topUp.id)"
            if let owner = productOwners[topUp.id] { problems.append("\(place): product is also listed by \(owner)") }
            productOwners[topUp.id] = place
            if !meterIds.contains(topUp.meter) { problems.append("\(place).meter \(topUp.meter) is not a defined meter") }
            if topUp.credits <= 0 { problems.append("\(place).credits must be positive") }
        }
        return problems
    }

    static func problems(of allowances: [String: Allowance], at place: String, meters: Set<String>) -> [String] {
        var problems: [String] = []
        for (meter, allowance) in allowances.sorted(by: { $0.key < $1.key }) {
            let where_ = "\(place).allowances.\(meter)"
            if !meters.contains(meter) { problems.append("\(where_): \(meter) is not a defined meter") }
            let kinds = [allowance.perCycle != nil, allowance.perDay != nil, allowance.isUnlimited].filter { $0 }.count
            if kinds != 1 { problems.append("\(where_): set exactly one of per_cycle, per_day, unlimited: true") }
            for (name, value) in [("per_cycle", allowance.perCycle), ("per_day", allowance.perDay), ("trial_cap", allowance.trialCap)] {
                if let value, value < 0 { problems.append("\(where_).\(name) must not be negative") }
            }
            if let cap = allowance.trialCap {
                if allowance.perCycle == nil { problems.append("\(where_).trial_cap needs per_cycle") }
                if let perCycle = allowance.perCycle, cap > perCycle { problems.append("\(where_).trial_cap \(cap) is above per_cycle \(perCycle)") }
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
