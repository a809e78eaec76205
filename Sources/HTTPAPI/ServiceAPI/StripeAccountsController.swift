import Application
import Foundation
import Hummingbird
import StripeAPI
import StripeStore
import Subscriptions

/// The service API's Stripe routes: `POST /v1/accounts/{id}/stripe/link {"subscriptionId"}`,
/// `POST /v1/accounts/{id}/stripe/checkout {"productId", "successUrl", "cancelUrl", "idempotencyKey"?}` → `{"url",
/// "sessionId"}` (409 `already_entitled` when the account has the tier or a higher one from any store),
/// `POST /v1/accounts/{id}/stripe/portal {"returnUrl"}` → `{"url"}`.
struct StripeAccountsController: Sendable {
    let linking: StripeSubscriptions
    /// The web app's checkout and portal; `nil` (no `STOREKEEPER_STRIPE_API_KEY`) leaves their routes out.
    let selling: StripeCheckout?
    let clock: @Sendable () -> Date

    struct LinkRequest: Decodable { var subscriptionId: String? }
    struct CheckoutRequest: Decodable {
        var productId: String?
        var successUrl: String?
        var cancelUrl: String?
        var idempotencyKey: String?
    }
    struct PortalRequest: Decodable { var returnUrl: String? }

    struct Linked: ResponseEncodable {
        var subscriptionId: String
        var accountId: String
        /// The subscription's status once linked; `null` while Stripe's copy is not held (no API key, or unknown).
        var status: String?
        var productId: String?
    }
    struct SessionURL: ResponseEncodable {
        var url: String
        var sessionId: String?
    }

    func addRoutes(to group: RouterGroup<StorekeeperRequestContext>) {
        group.post("accounts/{accountId}/stripe/link") { request, context -> Linked in
            let account = try AccountsController.accountId(context)
            let body = try await request.decodeJSONBody(as: LinkRequest.self, upTo: 4096, otherwise: #"body must be {"subscriptionId": "sub_…"}"#)
            guard let id = body.subscriptionId, Self.isStripeId(id, prefix: "sub_") else {
                throw APIError.badRequest(#"subscriptionId must be a Stripe subscription id (sub_…)"#)
            }
            let outcome = try await stripeCall { try await linking.link(id, to: account) }
            return Linked(subscriptionId: id, accountId: account.text, status: outcome?.state?.status.rawValue, productId: outcome?.state?.productId)
        }
        guard let selling else { return }
        group.post("accounts/{accountId}/stripe/checkout") { request, context -> EditedResponse<SessionURL> in
            let account = try AccountsController.accountId(context)
            let usage = #"body must be {"productId": "price_…", "successUrl": "https://…", "cancelUrl": "https://…"}"#
            let body = try await request.decodeJSONBody(as: CheckoutRequest.self, upTo: 16 * 1024, otherwise: usage)
            guard let productId = body.productId, let success = body.successUrl, let cancel = body.cancelUrl else { throw APIError.badRequest(usage) }
            try Self.checkURL(success, "successUrl")
            try Self.checkURL(cancel, "cancelUrl")
            if let key = body.idempotencyKey, key.isEmpty || key.utf8.count > 200 || !key.utf8.allSatisfy({ (0x21...0x7E).contains($0) }) {
                throw APIError.badRequest("idempotencyKey must be 1–200 printable ASCII characters")
            }
            let session = try await stripeCall {
                try await selling.checkout(
                    account: account, productId: productId, successURL: success, cancelURL: cancel, idempotencyKey: body.idempotencyKey, now: clock())
            }
            guard let url = session.url else { throw APIError(.badGateway, code: .stripeError, message: "Stripe returned a session without a url") }
            return EditedResponse(status: .created, response: SessionURL(url: url, sessionId: session.id))
        }
        group.post("accounts/{accountId}/stripe/portal") { request, context -> SessionURL in
            let account = try AccountsController.accountId(context)
            let body = try await request.decodeJSONBody(as: PortalRequest.self, upTo: 4096, otherwise: #"body must be {"returnUrl": "https://…"}"#)
            guard let returnURL = body.returnUrl else { throw APIError.badRequest(#"body must be {"returnUrl": "https://…"}"#) }
            try Self.checkURL(returnURL, "returnUrl")
            return SessionURL(url: try await stripeCall { try await selling.portal(account: account, returnURL: returnURL) }, sessionId: nil)
        }
    }

    /// Runs a Stripe use case, mapping its refusals to statuses: Stripe's own failures are a bad gateway, the
    /// database's a 503.
    func stripeCall<Result: Sendable>(_ body: @escaping @Sendable () async throws -> Result) async throws -> Result {
        try await withDatabase {
            do {
                return try await body()
            } catch let refusal as StripeCheckout.Refusal {
                switch refusal {
                case .unknownProduct(let id):
                    throw APIError(.badRequest, code: .unknownProduct, message: "\(id.prefix(100)) is not a Stripe product of the catalogue")
                case .alreadyEntitled(let tier, let store):
                    throw APIError(.conflict, code: .alreadyEntitled, message: "the account has tier \(tier) already (from \(store))")
                case .changeInPortal(let subscription):
                    throw APIError(
                        .conflict, code: .changeInPortal,
                        message:
                            "the account subscribes on the web already (\(subscription)): a change of plan is made in the billing portal, POST …/stripe/portal"
                    )
                case .noCustomer:
                    throw APIError(.notFound, code: .noCustomer, message: "the account has no Stripe customer: it never bought on the web")
                case .stripe(let error):
                    throw Self.gateway(error)
                }
            } catch let refusal as StripeSubscriptions.LinkRefusal {
                switch refusal {
                case .belongsToAnotherAccount:
                    throw APIError(
                        .conflict, code: .linkedElsewhere,
                        message: "another account holds the subscription (its checkout, its metadata or an earlier link)")
                }
            } catch let error as StripeAPIError {
                throw Self.gateway(error)
            }
        }
    }

    static func gateway(_ error: StripeAPIError) -> APIError {
        if error.kind == .notFound { return APIError(.notFound, code: .notFound, message: "Stripe: \(error.message.prefix(300))") }
        return APIError(.badGateway, code: .stripeError, message: "Stripe: \(error.message.prefix(300))")
    }

    static func isStripeId(_ id: String, prefix: String) -> Bool {
        id.hasPrefix(prefix) && id.utf8.count > prefix.utf8.count && id.utf8.count <= 255
            && id.utf8.allSatisfy {
                $0 == UInt8(ascii: "_") || (0x30...0x39).contains($0) || (0x41...0x5A).contains($0) || (0x61...0x7A).contains($0)
            }
    }

    static func checkURL(_ text: String, _ name: String) throws {
        // No spaces or control characters: Stripe would refuse them, and they have no place in a URL.
        guard text.utf8.count <= 2048, text.utf8.allSatisfy({ $0 > 0x20 && $0 != 0x7F }), let url = URL(string: text),
            ["http", "https"].contains(url.scheme ?? ""), url.host != nil
        else {
            throw APIError.badRequest("\(name) must be an http(s) URL of at most 2048 bytes")
        }
    }
}
