import Credits
import Foundation
import Testing

/// Typed features, product types and grantable tiers in the catalogue, as an operator writes them.
@Suite("Catalogue: typed features, lifetime and non-renewing products, grantable tiers")
struct CatalogueFeaturesTests {
    static let meters = [TierCatalogue.Meter(id: "ai", displayName: "AI")]
    static let quilt = FeatureDefinition(id: "context_quilt", displayName: "Context quilt", type: .level, levels: ["off", "teaser", "on", "choice"])

    func catalogue(features: [String: String] = [:], products: [TierCatalogue.Product]? = nil, definitions: [FeatureDefinition] = [quilt])
        -> TierCatalogue
    {
        TierCatalogue(
            meters: Self.meters, featureDefinitions: definitions,
            free: .init(displayName: "Free", features: ["context_quilt": "teaser"], allowances: ["ai": Allowance(perDay: 5)]),
            tiers: [
                .init(
                    id: "pro", level: 1, displayName: "Pro", features: features,
                    products: products ?? [.init(id: "pro.monthly", period: "P1M", price: 9990, currency: "USD")],
                    allowances: ["ai": Allowance(perCycle: 100)]),
                .init(id: "admin", level: 0, displayName: "Admin", products: [], allowances: ["ai": Allowance(unlimited: true)], grantableOnly: true),
            ],
            topUps: [])
    }

    @Test("every problem is reported at once: unknown feature, a value outside its levels, a pass without duration")
    func problemsAtOnce() {
        let problems = catalogue(
            features: ["context_quilt": "sometimes", "modle": "advanced"],
            products: [
                .init(id: "pro.pass", type: .nonRenewing, price: 100, currency: "USD"),
                .init(id: "pro.life", type: .lifetime, period: "P1M", price: 100, currency: "USD"),
            ]
        ).problems()
        #expect(problems.contains { $0.contains("tiers.pro.features.context_quilt") && $0.contains("not one of its levels") }, "\(problems)")
        #expect(problems.contains { $0.contains("tiers.pro.features.modle is not a defined feature") }, "\(problems)")
        #expect(problems.contains { $0.contains("pro.pass: a non_renewing product needs a duration") }, "\(problems)")
        #expect(problems.contains { $0.contains("a lifetime product has neither period nor duration") }, "\(problems)")
        #expect(catalogue().problems().isEmpty, "\(catalogue().problems())")
        var odd = catalogue(products: [.init(id: "pro.pass", type: .nonRenewing, price: 100, currency: "USD")])
        odd.upgradeCredits = .init("half")
        odd.featureDefinitions.append(FeatureDefinition(id: "days", displayName: "Days", type: .number))
        odd.tiers[0].features["days"] = "1e30"
        let oddProblems = odd.problems()
        #expect(oddProblems.contains("upgrade_credits half is not prorate or fresh"), "\(oddProblems)")
        #expect(oddProblems.contains { $0.contains("a non_renewing product needs a duration") }, "\(oddProblems)")
        #expect(oddProblems.contains { $0.contains("tiers.pro.features.days: 1e30 is beyond") }, "\(oddProblems)")
    }

    @Test("a tier's value, else the free tier's, else the definition's default, else the type's lowest")
    func featureFallbacks() {
        let images = FeatureDefinition(id: "images", displayName: "Images", type: .boolean)
        let days = FeatureDefinition(id: "days", displayName: "Days", type: .number, defaultValue: "7")
        let catalogue = catalogue(features: ["context_quilt": "choice"], definitions: [Self.quilt, images, days])
        #expect(catalogue.features(ofTier: "pro") == ["context_quilt": .level("choice"), "images": .boolean(false), "days": .number(7)])
        #expect(catalogue.features(ofTier: "free") == ["context_quilt": .level("teaser"), "images": .boolean(false), "days": .number(7)])
        #expect(catalogue.features(ofTier: "admin")["context_quilt"] == .level("teaser"))
    }

    @Test("a grantable_only tier sells nothing and may sit at level 0; a sold tier may not")
    func grantableTiers() {
        var sold = catalogue()
        sold.tiers[0].level = 0
        #expect(sold.problems().contains { $0.contains("tiers.pro.level must be 1 or more") })
        var selling = catalogue()
        selling.tiers[1].products = [.init(id: "admin.monthly", period: "P1M", price: 1, currency: "USD")]
        #expect(selling.problems().contains { $0.contains("a grantable_only tier sells no products") })
    }
}
