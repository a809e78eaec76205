import AppStoreServerAPI
import Entitlements
import Foundation
import Logging
import Persistence
import PostgresNIO
import Subscriptions

/// Signs offers for accounts that are eligible (``OfferEligibility``): the promotional-offer signature in both forms,
/// and the introductory-offer eligibility JWS.
public struct OfferSigning: Sendable {
    /// A signed promotional offer: what StoreKit's `Product.PurchaseOption.promotionalOffer` takes.
    public struct PromotionalOfferSignature: Sendable, Encodable {
        public var productId: String
        public var offerId: String
        public var keyId: String
        public var nonce: String
        /// Milliseconds since 1970; Apple accepts the signature for 24 hours from it.
        public var timestamp: Int64
        public var appAccountToken: String
        /// Base64 DER ECDSA signature (the original StoreKit form).
        public var signature: String
        /// The compact JWS newer StoreKit takes.
        public var jws: String
    }

    /// A signed introductory-offer eligibility.
    public struct IntroductoryEligibility: Sendable, Encodable {
        public var productId: String
        public var allowIntroductoryOffer: Bool
        public var reason: String?
        public var jws: String
    }

    public enum Outcome<Signed: Sendable>: Sendable {
        case signed(Signed)
        case unknownOffer
        case unknownProduct
        case notEligible(String)
        /// The `appAccountToken` passed is neither the account's own UUID nor a purchase intent it asked for: a
        /// signature must bind the account whose eligibility was checked.
        case foreignToken
    }

    let client: PostgresClient
    let signer: OfferSigner
    let offers: [PromotionalOffer]
    let subscriptionProducts: Set<String>
    let subscriptions: SubscriptionStore
    let purchaseIntents: PurchaseIntents
    let logger: Logger

    public init(
        client: PostgresClient, signer: OfferSigner, offers: [PromotionalOffer], subscriptionProducts: Set<String>, erased: ErasedAccounts,
        logger: Logger
    ) {
        self.client = client
        self.signer = signer
        self.offers = offers
        self.subscriptionProducts = subscriptionProducts
        self.subscriptions = SubscriptionStore(client: client, logger: logger)
        self.purchaseIntents = PurchaseIntents(client: client, erased: erased, logger: logger)
        self.logger = logger
    }

    /// What eligibility looks at: the account's subscriptions, and how many it lost to a refund, revocation or transfer.
    private func history(of account: AccountID, on connection: PostgresConnection) async throws
        -> (subscriptions: [SubscriptionState], former: Int)
    {
        (
            try await subscriptions.subscriptions(forAccount: account, on: connection),
            try await SubscriptionArchive(logger: logger).count(ofAccount: account, on: connection)
        )
    }

    /// Signs `offerId` for `account` when it is eligible, and records that it was signed. The signature binds the
    /// account: its `appAccountToken` is `appAccountToken` when that is the account's own UUID or a purchase intent of
    /// the account, else the account's UUID, else a purchase intent issued now. Requests for one account are
    /// serialized by the account's lock, so a once-per-account offer is signed once however many ask at once.
    public func promotional(
        _ offerId: String, account: AccountID, appAccountToken: String?, transactionId: String?, now: Date
    ) async throws -> Outcome<PromotionalOfferSignature> {
        guard let offer = offers.first(where: { $0.id == offerId }) else { return .unknownOffer }
        return try await client.withFencedTransaction(logger: logger) { connection in
            let signatures = OfferSignatures(logger: logger)
            try await signatures.lockAccount(account, on: connection)
            if let appAccountToken, try await purchaseIntents.account(ofToken: appAccountToken, on: connection) != account {
                return .foreignToken
            }
            if case .notEligible(let reason) = try await eligibility(of: offer, for: account, now: now, on: connection) {
                return .notEligible(reason)
            }
            let token =
                if let appAccountToken { appAccountToken.lowercased() } else if UUID(text: account.text) != nil { account.text } else {
                    try await purchaseIntents.issue(for: account, on: connection).lowercasedText
                }
            let nonce = UUID()
            let timestamp = Int64((now.timeIntervalSince1970 * 1000).rounded(.down))
            let signed = PromotionalOfferSignature(
                productId: offer.productId, offerId: offer.id, keyId: signer.keyId, nonce: nonce.lowercasedText,
                timestamp: timestamp, appAccountToken: token,
                signature: try signer.promotionalSignature(
                    productId: offer.productId, offerId: offer.id, appAccountToken: token, nonce: nonce, timestamp: timestamp),
                jws: try signer.promotionalJWS(
                    productId: offer.productId, offerId: offer.id, transactionId: transactionId, nonce: nonce, issuedAt: now))
            try await signatures.record(offer.id, productId: offer.productId, nonce: nonce, for: account, at: now, on: connection)
            return .signed(signed)
        }
    }

    /// The promotional-offer JWS alone, on the caller's transaction, under the same rules as
    /// ``promotional(_:account:appAccountToken:transactionId:now:)``: the account's lock, every eligibility rule, the
    /// signature recorded. A retention answer carries only this form (it binds no `appAccountToken`).
    public func promotionalJWS(
        _ offer: PromotionalOffer, account: AccountID, transactionId: String?, now: Date, on connection: PostgresConnection
    ) async throws -> Outcome<String> {
        let signatures = OfferSignatures(logger: logger)
        try await signatures.lockAccount(account, on: connection)
        if case .notEligible(let reason) = try await eligibility(of: offer, for: account, now: now, on: connection) {
            return .notEligible(reason)
        }
        let nonce = UUID()
        let jws = try signer.promotionalJWS(
            productId: offer.productId, offerId: offer.id, transactionId: transactionId, nonce: nonce, issuedAt: now)
        try await signatures.record(offer.id, productId: offer.productId, nonce: nonce, for: account, at: now, on: connection)
        return .signed(jws)
    }

    /// ``OfferEligibility/promotional(_:subscriptions:formerSubscriptions:signedBefore:now:)`` over what is stored.
    private func eligibility(of offer: PromotionalOffer, for account: AccountID, now: Date, on connection: PostgresConnection) async throws
        -> OfferEligibility.Decision
    {
        let history = try await history(of: account, on: connection)
        return OfferEligibility.promotional(
            offer, subscriptions: history.subscriptions, formerSubscriptions: history.former,
            signedBefore: try await OfferSignatures(logger: logger).wasSigned(offer.id, for: account, on: connection), now: now)
    }

    /// Signs whether `account` may have `productId`'s introductory offer: only an account that never subscribed.
    public func introductoryEligibility(
        productId: String, account: AccountID, transactionId: String, now: Date
    ) async throws -> Outcome<IntroductoryEligibility> {
        guard subscriptionProducts.contains(productId) else { return .unknownProduct }
        let history = try await client.withFencedConnection { try await self.history(of: account, on: $0) }
        let decision = OfferEligibility.introductory(subscriptions: history.subscriptions, formerSubscriptions: history.former)
        let allowed = decision == .eligible
        var reason: String?
        if case .notEligible(let why) = decision { reason = why }
        return .signed(
            IntroductoryEligibility(
                productId: productId, allowIntroductoryOffer: allowed, reason: reason,
                jws: try signer.introductoryEligibilityJWS(
                    productId: productId, allowIntroductoryOffer: allowed, transactionId: transactionId, nonce: UUID(), issuedAt: now)))
    }
}
