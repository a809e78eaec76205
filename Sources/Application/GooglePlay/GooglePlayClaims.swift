import Foundation
import GooglePlay
import GooglePlayAPI
import Logging
import Persistence
import PostgresNIO
import Subscriptions

/// Claims of Play purchases by accounts (`POST /v1/accounts/{id}/google/purchases`): for a purchase made before
/// Storekeeper, or without `obfuscatedExternalAccountId`. The token is read from Play, the claim is stored under the
/// transfer policy and the purchase derived with it — one transaction, the token (a subscription's whole chain)
/// locked, as a notification's read. A one-time product (a lifetime unlock, a top-up) is claimed when the claim names
/// it as `productId`, or when Play knows the token only as one. A claim is filed under the account it names even where
/// that id was erased before (``Lifecycle/Derivation/ownerClaimed``): the app says the purchase is that account's now.
public struct GooglePlayClaims: Sendable {
    /// What a claim came to.
    public enum Outcome: Sendable, Equatable {
        /// Claimed and derived: the subscription's state for the account (`nil`: not granted yet, a pending purchase, or
        /// a one-time product).
        case claimed(SubscriptionState?)
        /// Another account holds the subscription and the policy is `keep`; nothing changed.
        case ownedElsewhere(AccountID)
        /// Play does not know the token (another app's, or expired more than 60 days ago).
        case notFound
        /// Play refused to read it for good, or answered something that is not a subscription.
        case refused
        /// The claim named a product the purchase is not of (its product id, or `<productId>/<basePlanId>`); nothing
        /// changed.
        case productMismatch(String)
    }

    private let subscriptions: GooglePlaySubscriptions
    private let products: GooglePlayProducts?
    private let play: GooglePlayClient
    private let policy: TransferPolicy
    private let store: SubscriptionStore
    private let reads: GoogleSubscriptionStore
    /// Files a claimed token, so `google sync` reads it again as it does a notification's.
    private let tokens: GoogleNotificationStore
    private let clock: @Sendable () -> Date
    private let cache: AccountStatusCache?

    public init(
        client: PostgresClient, subscriptions: GooglePlaySubscriptions, products: GooglePlayProducts? = nil, play: GooglePlayClient,
        policy: TransferPolicy, cache: AccountStatusCache? = nil, clock: @escaping @Sendable () -> Date, logger: Logger
    ) {
        self.cache = cache
        self.products = products
        self.subscriptions = subscriptions
        self.play = play
        self.policy = policy
        self.store = SubscriptionStore(client: client, logger: logger)
        self.reads = GoogleSubscriptionStore(logger: logger)
        self.tokens = GoogleNotificationStore(logger: logger)
        self.clock = clock
    }

    /// Another account holds the chain under `keep`: the transaction is rolled back with this.
    struct HeldElsewhere: Error {
        var owner: AccountID
    }

    /// The purchase is of another product than the claim said: the transaction is rolled back with this.
    struct OtherProduct: Error {
        var product: String
    }

    /// What a claim's rolled-back transaction said: the purchase is another account's, or of another product.
    static func refusal(_ error: PostgresTransactionError) throws -> Outcome {
        if let held = error.closureError as? HeldElsewhere { return .ownedElsewhere(held.owner) }
        if let other = error.closureError as? OtherProduct { return .productMismatch(other.product) }
        throw error
    }

    /// Reads `token` from Play and claims it for `account`; `productId`, when given, must be the purchase's.
    public func claim(_ token: String, productId: String? = nil, by account: AccountID) async throws -> Outcome {
        let outcome = try await claimed(token, productId: productId, by: account)
        // After the commit: a claim may move a subscription between accounts, so every cached account goes.
        if case .claimed = outcome { cache?.invalidateAll() }
        return outcome
    }

    private func claimed(_ token: String, productId: String?, by account: AccountID) async throws -> Outcome {
        if let products, let productId, products.sellsOneTime(productId) {
            return try await claimedOneTime(token, productId: productId, by: account, products: products)
        }
        let outcome = try await claimedSubscription(token, productId: productId, by: account)
        // Play knows a one-time product's token only as one: asked again as a product when the claim named none.
        if let products, productId == nil, outcome == .notFound || outcome == .refused {
            let asProduct = try await claimedOneTime(token, productId: nil, by: account, products: products)
            if asProduct != .notFound && asProduct != .refused { return asProduct }
        }
        return outcome
    }

    private func claimedOneTime(_ token: String, productId: String?, by account: AccountID, products: GooglePlayProducts) async throws -> Outcome {
        let outcome: GooglePlaySubscriptions.Outcome
        do {
            outcome = try await products.refresh(
                token, using: play, cause: .init(notificationType: "google_play.claim", originalTransactionId: token),
                beforeDeriving: { [reads, tokens, clock] connection in
                    let bought = try await products.productId(of: token, on: connection)
                    if let productId, bought != productId { throw OtherProduct(product: bought ?? "none") }
                    // Only what the catalogue sells on Play is claimed here: a claim row of anything else could later
                    // hand a subscription of the same token to the claimant.
                    guard let bought, products.sellsOneTime(bought) else { throw OtherProduct(product: bought ?? "none") }
                    // A one-time purchase's credits or unlock stay where they went, whatever the policy: spent credits
                    // cannot move, so another account's purchase is refused under `transfer` too.
                    if let owner = try await products.owner(of: token, on: connection), owner != account {
                        throw HeldElsewhere(owner: owner)
                    }
                    try await reads.claim(token, by: account, at: clock(), on: connection)
                    try await tokens.fileToken(token, kind: "one_time_product", source: "claim", on: connection)
                })
        } catch let error as PostgresTransactionError {
            return try Self.refusal(error)
        }
        switch outcome {
        case .notFound: return .notFound
        case .refused: return .refused
        case .read: return .claimed(nil)
        }
    }

    private func claimedSubscription(_ token: String, productId: String?, by account: AccountID) async throws -> Outcome {
        let outcome: GooglePlaySubscriptions.Outcome
        do {
            outcome = try await subscriptions.refresh(
                token, using: play, cause: .init(notificationType: "google_play.claim", originalTransactionId: token),
                beforeDeriving: { [subscriptions, reads, tokens, policy, clock] connection, chain in
                    if let productId {
                        let purchase = PlaySubscriptionDerivation.derive(try await reads.reads(of: chain, on: connection))
                            .first { $0.tokens.contains(token) || $0.id == token }
                        let names = [purchase?.subscriptionProductId, purchase?.productId].compactMap { $0 }
                        guard names.contains(productId) else { throw OtherProduct(product: purchase?.productId ?? "none") }
                    }
                    if let owner = try await subscriptions.owner(ofChain: chain, on: connection), owner != account, policy == .keep {
                        throw HeldElsewhere(owner: owner)
                    }
                    try await reads.claim(token, by: account, at: clock(), on: connection)
                    try await tokens.fileToken(token, kind: "subscription", source: "claim", on: connection)
                })
        } catch let error as PostgresTransactionError {
            return try Self.refusal(error)
        }
        switch outcome {
        case .notFound: return .notFound
        case .refused: return .refused
        case .read:
            let filed = try await store.subscription(of: .googlePlay, id: token)
            if let filed { return .claimed(filed) }
            // The token continues a chain filed under an earlier token: the account's Play subscriptions say which.
            let held = try await store.subscriptions(forAccount: account).filter { $0.store == .googlePlay }
            return .claimed(held.max { ($0.expiresAt ?? .distantPast) < ($1.expiresAt ?? .distantPast) })
        }
    }
}
