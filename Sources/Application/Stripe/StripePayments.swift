import Analytics
import Credits
import Entitlements
import Events
import Foundation
import Logging
import Persistence
import PostgresNIO
import StripeAPI
import StripeStore
import Subscriptions

/// One-time payments through Stripe Checkout (`mode=payment`): a lifetime unlock of the catalogue (an entitlement
/// record, through ``OneTimePurchases``) or a top-up (credits, through ``TopUpPurchase``). Read again from Stripe at
/// each event — the session, the PaymentIntent's charges with their refunds, their disputes — filed, and derived from
/// the whole set (``StripePayment``): a full refund or a lost dispute takes it back, in any order of events.
public struct StripePayments: Sendable {
    let client: PostgresClient
    let stripe: StripeClient
    let objects: StripeObjectStore
    let purchases: OneTimePurchases
    let topUps: TopUpPurchase
    let catalogue: TierCatalogue
    let locks: SubscriptionStore
    /// Where each payment's revenue is recorded (``SubscriptionWriter/recordSale(_:on:)``).
    let writer: SubscriptionWriter?
    let clock: @Sendable () -> Date
    let logger: Logger

    public init(
        client: PostgresClient, stripe: StripeClient, purchases: OneTimePurchases, credits: CreditLedger, events: EventRecorder?,
        writer: SubscriptionWriter? = nil, clock: @escaping @Sendable () -> Date, logger: Logger
    ) {
        self.writer = writer
        self.client = client
        self.stripe = stripe
        self.objects = StripeObjectStore(logger: logger)
        self.purchases = purchases
        self.topUps = TopUpPurchase(ledger: credits, events: events, logger: logger)
        self.catalogue = credits.catalogue
        self.locks = SubscriptionStore(client: client, logger: logger)
        self.clock = clock
        self.logger = logger
    }

    /// Whether a PaymentIntent is a one-time payment Storekeeper holds (its session was filed).
    public func holds(_ paymentIntent: String) async throws -> Bool {
        try await client.withFencedConnection { try await !objects.held(ofPayment: paymentIntent, on: $0).checkoutSessions.isEmpty }
    }

    /// Reads the PaymentIntent's charges again, files them with `also`, and records the payment; returns the account
    /// it went to (`nil`: not a product sold this way, or no account named). `finishing` runs last in the transaction.
    @discardableResult
    public func refresh(
        _ paymentIntent: String, also: [StripeObjectStore.Read] = [], cause: EventCause,
        finishing: @escaping @Sendable (AccountID?, PostgresConnection) async throws -> Void = { _, _ in }
    ) async throws -> AccountID? {
        var reads = also
        for charge in try await stripe.charges(paymentIntent: paymentIntent) {
            reads.append(try .init(charge, id: charge.id, object: "charge", subscriptionId: nil))
        }
        let readAt = Date()
        let held = reads
        return try await client.withFencedTransaction(logger: logger) { connection in
            // The payment's lock before its objects' rows, as a subscription's.
            try await locks.lock(paymentIntent, on: connection)
            try await objects.save(held, readAt: readAt, on: connection)
            let facts = try await objects.held(ofPayment: paymentIntent, on: connection)
            var account: AccountID?
            if let session = facts.checkoutSessions.first,
                let payment = StripePayment(session: session, charges: facts.charges, disputes: facts.disputes)
            {
                account = try await record(payment, cause: cause, on: connection)
            }
            try await finishing(account, connection)
            return account
        }
    }

    func record(_ payment: StripePayment, cause: EventCause, on connection: PostgresConnection) async throws -> AccountID? {
        let now = clock()
        if let writer, let currency = payment.currency {
            try await writer.recordSale(
                OneTimeSale(
                    id: payment.id, store: .stripe, environment: StoreEnvironment(livemode: payment.livemode), productId: payment.priceId,
                    soldAt: payment.paidAt, price: payment.charged, currency: currency, refundedAt: payment.refunded > 0 ? payment.refundedAt : nil,
                    refunded: payment.refunded),
                on: connection)
        }
        if let topUp = catalogue.topUp(ofProduct: payment.priceId), topUp.store == .stripe {
            let sale = TopUpCredits.Sale(id: payment.id, productId: payment.priceId, quantity: payment.quantity, revoked: payment.endedAt != nil)
            let credited = try await topUps.record(
                sale, ledgerKey: payment.id, account: payment.account, environment: StoreEnvironment(livemode: payment.livemode),
                refundReason: payment.endReason?.text, now: now, cause: cause, on: connection)
            return credited ? payment.account : nil
        }
        return try await purchases.record(payment.record, account: payment.account, now: now, cause: cause, on: connection)
    }
}
