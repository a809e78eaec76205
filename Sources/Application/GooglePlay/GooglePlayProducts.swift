import Analytics
import Credits
import Entitlements
import Events
import Foundation
import GooglePlay
import GooglePlayAPI
import Jobs
import Logging
import Persistence
import PostgresNIO
import Subscriptions

/// Play's one-time products: a purchase token is read from the Play Developer API (`purchases.productsv2`), its read
/// kept, and the purchase derived from it and from the refunds Google reported (``PlayProductPurchase``) — a lifetime
/// unlock or a pass becomes an entitlement record (``OneTimePurchases``), a top-up adds its credits once
/// (``TopUpPurchase``); a refund, whole or of some units, takes back what it gave. A purchase granted to an account is
/// then acknowledged, or consumed for a top-up (``GoogleAcknowledgeJob``).
public struct GooglePlayProducts: Sendable {
    private let client: PostgresClient
    /// `nil` when no service account is configured: nothing can be read.
    public let play: GooglePlayClient?
    private let store: GoogleProductStore
    private let reads: GoogleSubscriptionStore
    private let purchases: OneTimePurchases
    private let topUps: TopUpPurchase
    private let credits: CreditLedger
    private let writer: SubscriptionWriter
    private let erased: ErasedAccounts
    private let queue: any JobScheduling
    private let clock: @Sendable () -> Date
    private let logger: Logger

    public init(
        client: PostgresClient, play: GooglePlayClient?, purchases: OneTimePurchases, credits: CreditLedger, events: EventRecorder?,
        writer: SubscriptionWriter, queue: any JobScheduling, erased: ErasedAccounts, clock: @escaping @Sendable () -> Date, logger: Logger
    ) {
        self.client = client
        self.play = play
        self.store = GoogleProductStore(logger: logger)
        self.reads = GoogleSubscriptionStore(logger: logger)
        self.purchases = purchases
        self.topUps = TopUpPurchase(ledger: credits, events: events, logger: logger)
        self.credits = credits
        self.writer = writer
        self.erased = erased
        self.queue = queue
        self.clock = clock
        self.logger = logger
    }

    /// Reads `token` and derives its purchase, then runs `also` in the same transaction (a job records its outcome and
    /// completes there); `beforeDeriving` runs there first (a claim records itself). What is worth a retry throws.
    public func refresh(
        _ token: String, using play: GooglePlayClient, cause: EventCause,
        beforeDeriving: @escaping @Sendable (PostgresConnection) async throws -> Void = { _ in },
        also: @escaping @Sendable (PostgresConnection, GooglePlaySubscriptions.Outcome) async throws -> Void = { _, _ in }
    ) async throws -> GooglePlaySubscriptions.Outcome {
        let requestedAt = clock()
        let answer: (purchase: ProductPurchaseV2, body: [UInt8])
        switch await Self.read(token, from: play) {
        case .success(let read): answer = read
        case .failure(let error):
            guard let outcome = GooglePlaySubscriptions.Outcome(failedRead: error) else { throw error }
            if outcome == .refused { logger.warning("Play refused to read a product token", metadata: ["google.error": "\(error)"]) }
            try await client.withFencedTransaction(logger: logger) { try await also($0, outcome) }
            return outcome
        }
        try await client.withFencedTransaction(logger: logger) { connection in
            try await reads.lock([token], on: connection)
            try await store.save(
                PlayProductRead(purchaseToken: token, readAt: requestedAt, purchase: answer.purchase), body: answer.body, on: connection)
            try await beforeDeriving(connection)
            try await deriveLocked(token, cause: cause, on: connection)
            try await also(connection, .read)
            try await reads.markRead(token, at: requestedAt, on: connection)
        }
        return .read
    }

    /// Derives the purchase of `token` again from what is held (a refund recorded, a credit window), in the caller's
    /// transaction; the account it went to, if any.
    @discardableResult
    public func derive(_ token: String, cause: EventCause, on connection: PostgresConnection) async throws -> AccountID? {
        try await reads.lock([token], on: connection)
        return try await deriveLocked(token, cause: cause, on: connection)
    }

    /// Whether the catalogue sells `productId` on Play as a one-time product (a lifetime unlock or a top-up).
    public func sellsOneTime(_ productId: String) -> Bool {
        let catalogue = credits.catalogue
        if let topUp = catalogue.topUp(ofProduct: productId) { return topUp.store == .googlePlay }
        return catalogue.tier(ofProduct: productId)?.product.store == .googlePlay && purchases.sells(productId)
    }

    /// The account holding the purchase of `token` now (in the caller's transaction, the token locked): the newest
    /// claim's, else the account its credits or its unlock went to, else the one its read names.
    public func owner(of token: String, on connection: PostgresConnection) async throws -> AccountID? {
        if let claimed = try await reads.claimingAccount(of: [token], on: connection) { return claimed }
        guard let held = try await store.reads(token, on: connection) else { return nil }
        // A purchase not completed yet (pending) is still the account it names: nobody else may claim it meanwhile.
        guard let purchase = PlayProductPurchase(held.newest, purchased: held.purchased, voided: []) else {
            return try await namedAccount((held.purchased ?? held.newest).purchase.obfuscatedExternalAccountId, on: connection)
        }
        if let credited = try await credits.creditedAccount(ofTopUp: purchase.id, on: connection) { return credited }
        if let unlocked = try await purchases.owner(of: purchase.id, on: connection) { return unlocked }
        return try await namedAccount(purchase.accountToken, on: connection)
    }

    /// The product of the purchase of `token`, as held.
    public func productId(of token: String, on connection: PostgresConnection) async throws -> String? {
        guard let held = try await store.reads(token, on: connection) else { return nil }
        return (held.purchased ?? held.newest).purchase.lineItems.first?.productId
    }

    /// Whether a read of `token` is held (a voided order's token is a product's, not a subscription's).
    public func holds(_ token: String, on connection: PostgresConnection) async throws -> Bool {
        try await store.read(token, on: connection) != nil
    }

    @discardableResult
    private func deriveLocked(_ token: String, cause: EventCause, on connection: PostgresConnection) async throws -> AccountID? {
        guard let held = try await store.reads(token, on: connection),
            let purchase = PlayProductPurchase(held.newest, purchased: held.purchased, voided: try await store.voided(of: [token], on: connection))
        else { return nil }
        let catalogue = credits.catalogue
        let named = try await namedAccount(purchase.accountToken, on: connection)
        // Play names an erased account in every new read (the app set the id at purchase): the read just stored is
        // filed under the pseudonym, as the erasure left the earlier ones.
        if let raw = purchase.accountToken.flatMap(AccountID.init), let named, named != raw,
            try await erased.pseudonym(of: raw, on: connection) == named
        {
            _ = try await erased.moveGooglePlay(held: [token], from: raw, to: named, on: connection)
        }
        let claimed = try await reads.claimingAccount(of: [token], on: connection)
        let now = clock()
        let environment: StoreEnvironment = purchase.isTest ? .sandbox : .production
        var cause = cause
        cause.originalTransactionId = purchase.id
        let granted: AccountID?
        let unitPrice: (Int64, String)?
        let kind: GoogleAcknowledgeJob.Purchase
        if let topUp = catalogue.topUp(ofProduct: purchase.productId), topUp.store == .googlePlay {
            let sale = TopUpCredits.Sale(
                id: purchase.id, productId: purchase.productId, quantity: purchase.quantity, revoked: purchase.isVoided,
                refundedQuantity: purchase.isVoided ? 0 : purchase.voidedQuantity)
            let owner = try await credits.creditedAccount(ofTopUp: purchase.id, on: connection) ?? claimed ?? named
            let credited = try await topUps.record(
                sale, ledgerKey: purchase.id, account: owner, environment: environment, refundReason: purchase.isVoided ? "REFUND" : nil, now: now,
                cause: cause, on: connection)
            granted = credited ? owner : nil
            unitPrice = topUp.price.flatMap { price in topUp.currency.map { (price, $0) } }
            kind = .consumable
        } else if let product = catalogue.tier(ofProduct: purchase.productId)?.product, product.store == .googlePlay,
            purchases.sells(purchase.productId)
        {
            let signed = max(purchase.observedAt, purchase.voidedAt ?? purchase.observedAt)
            let record = EntitlementRecord(
                id: purchase.id, kind: .purchase, store: .googlePlay, productId: purchase.productId, startsAt: purchase.purchasedAt,
                endedAt: purchase.isVoided ? purchase.voidedAt : nil, endReason: purchase.isVoided ? .refund : nil, environment: environment,
                ownership: .purchased, signedDate: Int64((signed.timeIntervalSince1970 * 1000).rounded(.down)))
            granted = try await purchases.record(record, account: claimed ?? named, now: now, cause: cause, on: connection)
            unitPrice = (product.price, product.currency)
            kind = .product
        } else {
            logger.notice("a Play product the catalogue does not sell was bought", metadata: ["google.product": "\(purchase.productId)"])
            return nil
        }
        if let (unit, currency) = unitPrice {
            // Saturating: a quantity or a price no sale has cannot trap the worker.
            let price = { (units: Int64) in unit.multipliedReportingOverflow(by: units).overflow ? Int64.max : unit * units }
            try await writer.recordSale(
                OneTimeSale(
                    id: purchase.id, store: .googlePlay, environment: environment, productId: purchase.productId,
                    soldAt: purchase.purchasedAt, price: price(purchase.quantity), currency: currency,
                    refundedAt: purchase.voidedQuantity > 0 ? purchase.voidedAt : nil, refunded: price(purchase.voidedQuantity)),
                on: connection)
        }
        // Granted: Google is told (a top-up is consumed, so it can be bought again), or it refunds after three days.
        if granted != nil, !purchase.isVoided, purchase.awaitsAcknowledgement || (kind == .consumable && !purchase.isConsumed) {
            try await GoogleAcknowledgeJob.enqueue(
                .init(productId: purchase.productId, purchaseToken: token, purchase: kind), grantedAt: purchase.purchasedAt, queue: queue,
                store: store,
                on: connection)
        }
        return granted
    }

    /// The account `obfuscatedExternalAccountId` names: a purchase intent's, else the id itself — under its erasure's
    /// pseudonym when it was erased, as every fact naming an erased account is.
    private func namedAccount(_ token: String?, on connection: PostgresConnection) async throws -> AccountID? {
        guard let token else { return nil }
        if let intended = try await writer.purchaseIntents.accounts(ofTokens: [token], on: connection)[token.lowercased()] { return intended }
        guard let named = AccountID(token) else { return nil }
        return try await erased.pseudonym(of: named, on: connection) ?? named
    }

    private static func read(_ token: String, from play: GooglePlayClient) async -> Result<
        (purchase: ProductPurchaseV2, body: [UInt8]), GooglePlayAPIError
    > {
        do {
            return .success(try await play.productPurchase(token))
        } catch {
            return .failure(error)
        }
    }
}
