import Application
import Foundation
import GooglePlay
import GooglePlayAPI
import Hummingbird
import Subscriptions

/// `POST /v1/accounts/{accountId}/google/purchases {"purchaseToken", "productId"?}`: the app posts a purchase's token
/// (Play Billing's `Purchase.getPurchaseToken()`) for a purchase made before Storekeeper or without
/// `obfuscatedExternalAccountId`. The token is read from Play, linked to the account under the transfer policy and
/// applied; the answer is the account's status (201 is not used: a claim of a claimed token answers the same).
struct GooglePlayAccountsController: Sendable {
    /// `nil`: no service account is configured, Play cannot be read.
    let claims: GooglePlayClaims
    let accounts: AccountsController

    struct ClaimRequest: Decodable {
        var purchaseToken: String?
        var productId: String?
    }

    static let usage = #"body must be {"purchaseToken": "…", "productId": "…"?}"#

    func addRoutes(to group: RouterGroup<StorekeeperRequestContext>) {
        group.post("accounts/{accountId}/google/purchases") { request, context -> AccountStatusResponse in
            let account = try AccountsController.accountId(context)
            let body = try await request.decodeJSONBody(as: ClaimRequest.self, upTo: 8192, otherwise: Self.usage)
            guard let token = body.purchaseToken else { throw APIError.badRequest(Self.usage) }
            guard !token.isEmpty, token.utf8.count <= DeveloperNotification.maximumTokenBytes, token.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F })
            else {
                throw APIError.badRequest("purchaseToken must be 1 to \(DeveloperNotification.maximumTokenBytes) printable ASCII bytes")
            }
            if let productId = body.productId,
                productId.isEmpty || productId.utf8.count > 200 || !productId.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F })
            {
                throw APIError.badRequest("productId must be 1 to 200 printable ASCII bytes")
            }
            let outcome = try await withDatabase {
                do {
                    return try await claims.claim(token, productId: body.productId, by: account)
                } catch let error as GooglePlayAPIError {
                    throw APIError(.badGateway, code: .googleError, message: "Google Play: \(error.message.prefix(300))")
                }
            }
            switch outcome {
            case .claimed:
                return try await accounts.status(of: account)
            case .ownedElsewhere:
                throw APIError(
                    .conflict, code: .purchaseOwnedElsewhere,
                    message: "another account holds this purchase; the transfer policy is keep")
            case .notFound:
                throw APIError(
                    .notFound, code: .purchaseNotFound,
                    message: "Google Play does not know the purchase token (another app's, or expired over 60 days ago)")
            case .productMismatch(let product):
                throw APIError(
                    .unprocessableContent, code: .productMismatch,
                    message: "the purchase is of \(product.prefix(200)), not the productId the claim named")
            case .refused:
                throw APIError(
                    .unprocessableContent, code: .notASubscription,
                    message: "Google Play does not read the token as a purchase of this app")
            }
        }
    }
}
