import Application
import Entitlements
import Foundation
import Hummingbird
import Subscriptions

extension OfferSigning.PromotionalOfferSignature: ResponseEncodable {}
extension OfferSigning.IntroductoryEligibility: ResponseEncodable {}

/// `POST /v1/offers/promotional` and `POST /v1/offers/introductory-eligibility`: signatures the app passes to
/// StoreKit, made with the In-App Purchase key the app cannot hold, only for eligible accounts.
struct OffersController: Sendable {
    let offers: OfferSigning
    let clock: @Sendable () -> Date

    struct PromotionalBody: Decodable {
        var accountId: String
        var offerId: String
        var appAccountToken: String?
        var transactionId: String?
    }

    struct EligibilityBody: Decodable {
        var accountId: String
        var productId: String
        var transactionId: String
    }

    func addRoutes(to group: RouterGroup<StorekeeperRequestContext>) {
        group.post("offers/promotional") { request, _ -> OfferSigning.PromotionalOfferSignature in
            let offers = self.offers
            let body = try await request.decodeJSONBody(
                as: PromotionalBody.self, upTo: 4096,
                otherwise: "the body must be {\"accountId\", \"offerId\", \"appAccountToken\"?, \"transactionId\"?}")
            let account = try Self.account(body.accountId)
            if let token = body.appAccountToken, UUID(text: token) == nil {
                throw APIError.badRequest("appAccountToken must be the UUID the app passes to StoreKit")
            }
            try Self.check(body.transactionId, "transactionId")
            let now = clock()
            return try Self.signed(
                try await withDatabase {
                    try await offers.promotional(
                        body.offerId, account: account, appAccountToken: body.appAccountToken, transactionId: body.transactionId, now: now)
                },
                subject: "offer \(body.offerId)")
        }
        group.post("offers/introductory-eligibility") { request, _ -> OfferSigning.IntroductoryEligibility in
            let offers = self.offers
            let body = try await request.decodeJSONBody(
                as: EligibilityBody.self, upTo: 4096,
                otherwise:
                    "the body must be {\"accountId\", \"productId\", \"transactionId\"} (the customer's appTransactionId or any of its transactions)")
            let account = try Self.account(body.accountId)
            try Self.check(body.transactionId, "transactionId")
            let now = clock()
            return try Self.signed(
                try await withDatabase {
                    try await offers.introductoryEligibility(
                        productId: body.productId, account: account, transactionId: body.transactionId, now: now)
                },
                subject: "product \(body.productId)")
        }
    }

    static func account(_ text: String) throws -> AccountID {
        guard let account = AccountID(text) else {
            throw APIError.badRequest("accountId must be the app's account id: \(AccountID.rule)")
        }
        return account
    }

    static func check(_ identifier: String?, _ name: String) throws {
        guard let identifier else { return }
        guard !identifier.isEmpty, identifier.utf8.count <= 64, identifier.allSatisfy({ $0.isASCII && $0.isNumber }) else {
            throw APIError.badRequest("\(name) must be an App Store transaction id (digits)")
        }
    }

    static func signed<Signed>(_ outcome: OfferSigning.Outcome<Signed>, subject: String) throws -> Signed {
        switch outcome {
        case .signed(let signed): return signed
        case .unknownOffer, .unknownProduct:
            throw APIError(.notFound, code: .notFound, message: "\(subject) is not configured (STOREKEEPER_OFFERS, STOREKEEPER_TIERS)")
        case .notEligible(let reason):
            throw APIError(.forbidden, code: .notEligible, message: reason)
        case .foreignToken:
            throw APIError(
                .forbidden, code: .foreignAppAccountToken,
                message: "appAccountToken must be the account's own UUID or a token from its POST /v1/accounts/{id}/purchase-intents")
        }
    }
}
