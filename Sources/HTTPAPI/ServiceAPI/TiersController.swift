import Credits
import Foundation
import Hummingbird
import NIOCore

/// `GET /v1/tiers` (no authentication): the catalogue for a server-driven paywall — meters, feature definitions, the
/// free tier, paid tiers with display copy, highlights, feature values, products and allowances, and top-ups. Tiers
/// only grants entitle (`grantable_only`) are left out: no paywall sells them.
public struct TiersController: Sendable {
    let catalogue: TierCatalogue

    public init(catalogue: TierCatalogue) { self.catalogue = catalogue }

    public func addRoutes(to router: Router<StorekeeperRequestContext>) {
        // The catalogue is fixed for the process's life: encoded once, not on every paywall load.
        let encoder = StorekeeperRequestContext.jsonEncoder
        let body = ByteBuffer(data: (try? encoder.encode(TiersResponse(catalogue: catalogue))) ?? Data("{}".utf8))
        router.get("/v1/tiers") { _, _ in
            Response(status: .ok, headers: [.contentType: APIError.jsonContentType], body: .init(byteBuffer: body))
        }
    }
}

/// The paywall view of the catalogue, in the API's camelCase.
struct TiersResponse: Encodable {
    struct AllowanceView: Encodable {
        var perCycle: Int64?
        var perDay: Int64?
        var unlimited: Bool
        var trialCap: Int64?
        /// Cycle credits of annual products reset monthly.
        var resetsMonthly: Bool?
    }

    struct ProductView: Encodable {
        var id: String
        /// Where it is sold: `app_store` (StoreKit) or `stripe` (the web app's checkout).
        var store: String
        /// `auto_renewable`, `lifetime` or `non_renewing`.
        var type: String
        var period: String?
        var duration: String?
        var price: Int64
        var currency: String
        var displayPrice: String
    }

    struct TierView: Encodable {
        var id: String
        var level: Int?
        var displayName: String
        var description: String?
        var highlights: [String]
        /// The highlights again, under the name they had before typed features (kept for paywalls that read it).
        var features: [String]
        /// Every defined feature's value for the tier.
        var featureValues: [String: FeatureValue]
        var products: [ProductView]
        var allowances: [String: AllowanceView]
    }

    struct TopUpView: Encodable {
        var id: String
        /// Which store sells it (`app_store`, `stripe`, `google_play`): the same product id means nothing to another.
        var store: String
        var meter: String
        var credits: Int64
        var price: Int64?
        var currency: String?
    }

    struct MeterView: Encodable {
        var id: String
        var displayName: String
        var description: String?
    }

    struct FeatureDefinitionView: Encodable {
        var id: String
        var displayName: String
        var description: String?
        var type: String
        var levels: [String]?
        var teaser: String?
        var upgradeCallToAction: String?
        /// The value of a tier that sets none and of a free tier that sets none.
        var defaultValue: String?

        enum CodingKeys: String, CodingKey {
            case id, displayName, description, type, levels, teaser, upgradeCallToAction
            case defaultValue = "default"
        }
    }

    var meters: [MeterView]
    var featureDefinitions: [FeatureDefinitionView]
    /// What an upgrade's first window grants: `prorate` or `fresh` (docs/credits.md).
    var upgradeCredits: String
    var free: TierView
    var tiers: [TierView]
    var topUps: [TopUpView]

    init(catalogue: TierCatalogue) {
        func allowances(_ allowances: [String: Allowance], annual: Bool) -> [String: AllowanceView] {
            allowances.mapValues {
                AllowanceView(
                    perCycle: $0.perCycle, perDay: $0.perDay, unlimited: $0.isUnlimited, trialCap: $0.trialCap,
                    resetsMonthly: $0.perCycle != nil && annual ? true : nil)
            }
        }
        meters = catalogue.meters.map { MeterView(id: $0.id, displayName: $0.displayName, description: $0.description) }
        featureDefinitions = catalogue.featureDefinitions.map {
            FeatureDefinitionView(
                id: $0.id, displayName: $0.displayName, description: $0.description, type: $0.type.text, levels: $0.levels,
                teaser: $0.teaser, upgradeCallToAction: $0.upgradeCallToAction, defaultValue: $0.defaultValue)
        }
        upgradeCredits = catalogue.upgradeCredits.text
        let freeHighlights = catalogue.free.highlights ?? []
        free = TierView(
            id: "free", level: nil, displayName: catalogue.free.displayName, description: catalogue.free.description,
            highlights: freeHighlights, features: freeHighlights, featureValues: catalogue.features(ofTier: "free"), products: [],
            allowances: allowances(catalogue.free.allowances, annual: false))
        tiers = catalogue.tiers.filter { !$0.grantableOnly }.sorted { $0.level > $1.level }.map { tier in
            TierView(
                id: tier.id, level: tier.level, displayName: tier.displayName, description: tier.description,
                highlights: tier.highlights ?? [], features: tier.highlights ?? [], featureValues: catalogue.features(ofTier: tier.id),
                products: tier.products.map {
                    ProductView(
                        id: $0.id, store: $0.store.text, type: $0.type.text, period: $0.period, duration: $0.duration, price: $0.price,
                        currency: $0.currency,
                        displayPrice: String(format: "%.2f", Double($0.price) / 1000))
                },
                allowances: allowances(
                    tier.allowances, annual: tier.products.contains { $0.billingPeriod?.resetsMonthly == true || $0.type == .lifetime }))
        }
        topUps = catalogue.topUps.map {
            TopUpView(id: $0.id, store: $0.store.text, meter: $0.meter, credits: $0.credits, price: $0.price, currency: $0.currency)
        }
    }
}
