import Credits
import Crypto
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
        /// The account subscribes on the web already, to a tier of the group below the one asked for: the change is
        /// an upgrade of that subscription, made in the billing portal (a second subscription would bill twice).
        case changeInPortal(subscription: String)
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

    /// A Checkout Session for `productId` bought by `account`. Refused when the account has the tier or a higher one
    /// of its group from any store, or subscribes on the web already (a change of plan is the portal's); while a session
    /// for a product of the same group is still open, that session is answered again — two tabs, one payment.
    /// `idempotencyKey` makes a retried request return the same session.
    public func checkout(
        account: AccountID, productId: String, successURL: String, cancelURL: String, idempotencyKey: String?, now: Date
    ) async throws -> StripeCheckoutSession {
        let recurring: Bool
        var sameGroup = [productId]
        if let topUp = catalogue.topUp(ofProduct: productId), topUp.store == .stripe {
            // Credits can be bought again and again.
            recurring = false
        } else if let (tier, product) = catalogue.tier(ofProduct: productId), product.store == .stripe {
            let standing = try await accounts.status(of: account, now: now)
            let group = standing.entitlements.entitling.filter { ($0.group ?? tier.group) == tier.group }
            if let holder = group.first(where: { ($0.level ?? .max) <= tier.level }) {
                throw Refusal.alreadyEntitled(tier: holder.tier ?? "", store: holder.store.text)
            }
            if let web = group.first(where: { $0.store == .stripe && $0.kind == .subscription }) {
                throw Refusal.changeInPortal(subscription: web.id)
            }
            recurring = product.type == .autoRenewable
            sameGroup = catalogue.tiers.filter { $0.group == tier.group }.flatMap(\.products)
                .filter { $0.store == .stripe && $0.type == .autoRenewable }.map(\.id)
        } else {
            throw Refusal.unknownProduct(productId)
        }
        var form = StripeForm([
            ("mode", recurring ? "subscription" : "payment"), ("line_items[0][price]", productId), ("line_items[0][quantity]", "1"),
            ("success_url", successURL), ("cancel_url", cancelURL), ("client_reference_id", account.text),
            ("metadata[\(StripeSubscription.accountMetadataKey)]", account.text), ("metadata[\(StripeSubscription.productMetadataKey)]", productId),
        ])
        if recurring { form.append("subscription_data[metadata][\(StripeSubscription.accountMetadataKey)]", account.text) }
        let key = Self.stripeIdempotencyKey(account: account, productId: productId, idempotencyKey: idempotencyKey ?? UUID().uuidString)
        let prepared = form
        // Refusals are returned from the transaction, not thrown: PostgresNIO wraps what a transaction's body throws.
        let outcome: Result<StripeCheckoutSession, Refusal> = try await client.withFencedTransaction(logger: logger) { [sameGroup] connection in
            try await objects.lockCheckout(of: account, on: connection)
            if recurring, let open = try await objects.openSession(ofAccount: account, products: sameGroup, now: now, on: connection) {
                // What is held may be stale (its completion's event not processed, or lost): Stripe says.
                var current: StripeCheckoutSession?
                do {
                    current = try await stripe.checkoutSession(open.id)
                } catch let error as StripeAPIError where error.kind == .notFound {
                    // Stripe does not know it (any more): it stands for nothing; a new session is made below.
                    try await objects.forgetSession(open.id, on: connection)
                } catch let error as StripeAPIError {
                    return .failure(.stripe(error))
                }
                if let current {
                    try await objects.save(
                        [try .init(current, id: current.id, object: "checkout.session", subscriptionId: current.subscription)], readAt: Date(),
                        on: connection)
                    if current.status == "open" { return .success(current) }
                    // Paid, and its events not processed yet: the account has the tier, whatever Storekeeper holds.
                    if current.status == "complete", let paid = current.metadata?[StripeSubscription.productMetadataKey] {
                        return .failure(.alreadyEntitled(tier: catalogue.tier(ofProduct: paid)?.tier.id ?? paid, store: "stripe"))
                    }
                }
            }
            var form = prepared
            if let customer = try await objects.customer(ofAccount: account, on: connection) { form.append("customer", customer) }
            let session: StripeCheckoutSession
            do {
                session = try await stripe.createCheckoutSession(form, idempotencyKey: key)
            } catch let error as StripeAPIError {
                return .failure(.stripe(error))
            }
            try await objects.save(
                [try .init(session, id: session.id, object: "checkout.session", subscriptionId: nil)], readAt: Date(), on: connection)
            return .success(session)
        }
        return try outcome.get()
    }

    /// A billing-portal URL for the account's Stripe customer, returning to `returnURL`.
    public func portal(account: AccountID, returnURL: String) async throws -> String {
        guard let customer = try await client.withFencedConnection({ try await objects.customer(ofAccount: account, on: $0) }) else {
            throw Refusal.noCustomer
        }
        do {
            return try await stripe.createPortalSession(
                customer: customer, returnURL: returnURL, idempotencyKey: "storekeeper-portal:\(UUID().uuidString)")
        } catch {
            throw Refusal.stripe(error)
        }
    }
}

extension StripeCheckout {
    /// The `Idempotency-Key` of a checkout session: `storekeeper-checkout:<account>:<product>:<key>`, each part escaped
    /// so no account and key can make another's (an account id may hold a colon). Stripe takes at most 255 characters
    /// (docs.stripe.com/api/idempotent_requests) and refused a longer one with 400, answered 502: past that, the same
    /// parts are named by their SHA-256.
    static func stripeIdempotencyKey(account: AccountID, productId: String, idempotencyKey: String) -> String {
        let named = "storekeeper-checkout:" + [account.text, productId, idempotencyKey].map(StripeForm.escape).joined(separator: ":")
        guard named.utf8.count > 255 else { return named }
        return "storekeeper-checkout:sha256:" + SHA256.hash(data: Array(named.utf8)).map { String(format: "%02x", $0) }.joined()
    }
}
