import Foundation
import GooglePlay
import GooglePlayAPI
import Logging
import Persistence
import PostgresNIO
import Subscriptions

/// Claims of Play purchases by accounts (`POST /v1/accounts/{id}/google/purchases`): for a purchase made before
/// Storekeeper, or without `obfuscatedExternalAccountId`. The token is read from Play, the claim is stored under the
/// transfer policy and the chain derived with it — one transaction, the chain locked, as a notification's read.
public struct GooglePlayClaims: Sendable {
    /// What a claim came to.
    public enum Outcome: Sendable, Equatable {
        /// Claimed and derived: the subscription's state for the account (`nil`: not granted yet, a pending purchase).
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
    private let play: GooglePlayClient
    private let policy: TransferPolicy
    private let store: SubscriptionStore
    private let reads: GoogleSubscriptionStore
    private let clock: @Sendable () -> Date
    private let cache: AccountStatusCache?

    public init(
        client: PostgresClient, subscriptions: GooglePlaySubscriptions, play: GooglePlayClient, policy: TransferPolicy,
        cache: AccountStatusCache? = nil, clock: @escaping @Sendable () -> Date, logger: Logger
    ) {
        self.cache = cache
        self.subscriptions = subscriptions
        self.play = play
        self.policy = policy
        self.store = SubscriptionStore(client: client, logger: logger)
        self.reads = GoogleSubscriptionStore(logger: logger)
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

    /// Reads `token` from Play and claims it for `account`; `productId`, when given, must be the purchase's.
    public func claim(_ token: String, productId: String? = nil, by account: AccountID) async throws -> Outcome {
        let outcome = try await claimed(token, productId: productId, by: account)
        // After the commit: a claim may move a subscription between accounts, so every cached account goes.
        if case .claimed = outcome { cache?.invalidateAll() }
        return outcome
    }

    private func claimed(_ token: String, productId: String?, by account: AccountID) async throws -> Outcome {
        let outcome: GooglePlaySubscriptions.Outcome
        do {
            outcome = try await subscriptions.refresh(
                token, using: play, cause: .init(notificationType: "google_play.claim", originalTransactionId: token),
                beforeDeriving: { [subscriptions, reads, policy, clock] connection, chain in
                    if let productId {
                        let purchase = PlaySubscriptionDerivation.derive(try await reads.reads(of: chain, on: connection))
                            .first { $0.tokens.contains(token) || $0.id == token }
                        let names = [purchase?.subscriptionProductId, purchase?.productId].compactMap { $0 }
                        guard names.contains(productId) else { throw OtherProduct(product: purchase?.productId ?? "none") }
                    }
                    let claimant = try await subscriptions.claimant(account, on: connection)
                    if let owner = try await subscriptions.owner(ofChain: chain, on: connection), owner != claimant, policy == .keep {
                        throw HeldElsewhere(owner: owner)
                    }
                    try await reads.claim(token, by: claimant, at: clock(), on: connection)
                })
        } catch let error as PostgresTransactionError {
            if let held = error.closureError as? HeldElsewhere { return .ownedElsewhere(held.owner) }
            if let other = error.closureError as? OtherProduct { return .productMismatch(other.product) }
            throw error
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
