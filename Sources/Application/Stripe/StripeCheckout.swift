import Credits
import Entitlements
import Foundation
import Logging
import Persistence
import PostgresNIO
import StripeAPI
import StripeStore
import Subscriptions

/// What the web app needs from Stripe for an account: a Checkout Session for a catalogue product with the account
/// filled in — refused when the account has that tier or a higher one already, from any store, so nobody pays twice —
/// and a billing-portal session for the account's Stripe customer.
public struct StripeCheckout: Sendable {
    /// Why a request is refused (mapped to HTTP at the edge).
    public enum Refusal: Error, Sendable {
        /// The product is not a Stripe product of the catalogue.
        case unknownProduct(String)
        /// The account has the product's tier, or a higher one of its group, already: the source that entitles it.
        case alreadyEntitled(tier: String, store: String)
        /// The account has no Stripe customer yet (it never bought on the web).
        case noCustomer
        /// Stripe refused or could not be reached.
        case stripe(StripeAPIError)
    }

    let client: PostgresClient
    let stripe: StripeClient
    let accounts: AccountStatusQuery
    let catalogue: TierCatalogue
    let objects: StripeObjectStore
    let logger: Logger

    public init(client: PostgresClient, stripe: StripeClient, accounts: AccountStatusQuery, catalogue: TierCatalogue, logger: Logger) {
        self.client = client
        self.stripe = stripe
        self.accounts = accounts
        self.catalogue = catalogue
        self.objects = StripeObjectStore(logger: logger)
        self.logger = logger
    }

    /// A Checkout Session's URL for `productId` bought by `account`. `idempotencyKey` makes a retried request return
    /// the same session.
    public func checkout(
        account: AccountID, productId: String, successURL: String, cancelURL: String, idempotencyKey: String?, now: Date
    ) async throws -> StripeCheckoutSession {
        let recurring: Bool
        if let topUp = catalogue.topUp(ofProduct: productId), topUp.store == .stripe {
            // Credits can be bought again and again.
            recurring = false
        } else if let (tier, product) = catalogue.tier(ofProduct: productId), product.store == .stripe {
            let standing = try await accounts.status(of: account, now: now)
            if let holder = standing.entitlements.entitling.first(where: { ($0.group ?? tier.group) == tier.group && ($0.level ?? .max) <= tier.level }) {
                throw Refusal.alreadyEntitled(tier: holder.tier ?? "", store: holder.store.text)
            }
            recurring = product.type == .autoRenewable
        } else {
            throw Refusal.unknownProduct(productId)
        }
        var form = StripeForm([
            ("mode", recurring ? "subscription" : "payment"), ("line_items[0][price]", productId), ("line_items[0][quantity]", "1"),
            ("success_url", successURL), ("cancel_url", cancelURL), ("client_reference_id", account.text),
        ])
        if recurring { form.append("subscription_data[metadata][\(StripeSubscription.accountMetadataKey)]", account.text) }
        form.append("metadata[\(StripeSubscription.accountMetadataKey)]", account.text)
        if let customer = try await client.withConnection({ try await objects.customer(ofAccount: account, on: $0) }) {
            form.append("customer", customer)
        }
        let key = idempotencyKey.map { "storekeeper-checkout:\(account.text):\($0)" } ?? "storekeeper-checkout:\(UUID().uuidString)"
        do {
            return try await stripe.createCheckoutSession(form, idempotencyKey: key)
        } catch {
            throw Refusal.stripe(error)
        }
    }

    /// A billing-portal URL for the account's Stripe customer, returning to `returnURL`.
    public func portal(account: AccountID, returnURL: String) async throws -> String {
        guard let customer = try await client.withConnection({ try await objects.customer(ofAccount: account, on: $0) }) else {
            throw Refusal.noCustomer
        }
        do {
            return try await stripe.createPortalSession(customer: customer, returnURL: returnURL, idempotencyKey: "storekeeper-portal:\(UUID().uuidString)")
        } catch {
            throw Refusal.stripe(error)
        }
    }
}
