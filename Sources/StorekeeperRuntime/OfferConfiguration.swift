import Credits
import Foundation
import Subscriptions

/// `STOREKEEPER_OFFERS`: the path of a YAML file, or the YAML (or JSON) itself, listing the promotional offers the
/// app may ask Storekeeper to sign (docs/offers.md):
///
/// ```yaml
/// offers:
///   - id: pro_winback_50          # the offer identifier in App Store Connect
///     product: pro.monthly        # a subscription product of the tier catalogue
///     audience: lapsed            # active | lapsed | subscribers
///     once_per_account: true      # optional, default true
/// ```
enum OfferConfiguration {
    struct File: Decodable {
        var offers: [Offer]
    }

    struct Offer: Decodable {
        var id: String
        var product: String
        var audience: String
        var oncePerAccount: Bool?

        enum CodingKeys: String, CodingKey {
            case id, product, audience
            case oncePerAccount = "once_per_account"
        }
    }

    /// The offers `value` describes, checked against `catalogue`, or every problem found.
    static func offers(from value: String, catalogue: TierCatalogue) throws(ConfigurationError) -> [PromotionalOffer] {
        let place = "STOREKEEPER_OFFERS"
        let file = try YAMLSetting.decode(File.self, from: value, place: place, keys: .offers)
        var problems: [String] = []
        var offers: [PromotionalOffer] = []
        for (index, offer) in file.offers.enumerated() {
            let at = "\(place): offers.\(index)"
            if offer.id.isEmpty || offer.id.utf8.count > 64 || offer.id.unicodeScalars.contains(where: { $0.properties.generalCategory == .control })
            {
                problems.append("\(at).id must be 1–64 printable bytes, got \"\(offer.id)\"")
            }
            if offers.contains(where: { $0.id == offer.id }) { problems.append("\(at).id \"\(offer.id)\" is listed twice") }
            if catalogue.tier(ofProduct: offer.product)?.product.type != .autoRenewable {
                problems.append("\(at).product \"\(offer.product)\" is not a subscription product of the tier catalogue")
            }
            guard let audience = PromotionalOffer.Audience(rawValue: offer.audience) else {
                problems.append("\(at).audience must be one of \(PromotionalOffer.Audience.allCases.map(\.rawValue).joined(separator: ", "))")
                continue
            }
            offers.append(PromotionalOffer(id: offer.id, productId: offer.product, audience: audience, oncePerAccount: offer.oncePerAccount ?? true))
        }
        guard problems.isEmpty else { throw ConfigurationError(problems: problems) }
        return offers
    }
}
