import AppStoreModels
import Entitlements
import Foundation

/// A one-time sale — a lifetime unlock, a non-renewing pass, a pack of credits — as the revenue measures count it.
public struct OneTimeSale: Sendable, Equatable {
    /// The store's id of the sale: the App Store transaction id, Stripe's PaymentIntent.
    public var id: String
    public var store: Store
    /// Where it was sold; analytics files it under ``StoreEnvironment/rollup``.
    public var environment: StoreEnvironment
    public var productId: String
    public var soldAt: Date
    /// What the customer paid, in milliunits of ``currency``.
    public var price: Int64
    public var currency: String
    /// When a refund took money back, and how much.
    public var refundedAt: Date?
    public var refunded: Int64

    public init(
        id: String, store: Store, environment: StoreEnvironment, productId: String, soldAt: Date, price: Int64, currency: String,
        refundedAt: Date? = nil,
        refunded: Int64 = 0
    ) {
        self.id = id
        self.store = store
        self.environment = environment
        self.productId = productId
        self.soldAt = soldAt
        self.price = price
        self.currency = currency
        self.refundedAt = refundedAt
        self.refunded = refunded
    }
}

/// What a one-time sale adds to the rollups: its price to gross revenue and one transaction on the day it was sold,
/// and any refund to refunds and refunded transactions on the day it was refunded. Like a subscription's, a pure
/// function of the sale's facts: recording it again adds nothing. Sales are not subscriptions: they add to no
/// subscription measure (actives, MRR, churn, customers).
public enum PurchaseAnalytics {
    /// The rollups key a sale's contribution under, beside the subscriptions'.
    public static func key(of sale: OneTimeSale) -> String { "sale:" + sale.id }

    public static func contribution(of sale: OneTimeSale) -> AnalyticsContribution {
        var contribution = AnalyticsContribution()
        guard sale.price > 0, !sale.currency.isEmpty else { return contribution }
        func add(_ measure: AnalyticsMeasure, _ value: Int64, on date: Date, currency: String = "") {
            contribution.add(
                value,
                at: AnalyticsKey(
                    day: AnalyticsDay(date), measure: measure, store: sale.store, environment: sale.environment.rollup, product: sale.productId,
                    currency: currency))
        }
        add(.transactions, 1, on: sale.soldAt)
        add(.revenueGross, sale.price, on: sale.soldAt, currency: sale.currency)
        if let refundedAt = sale.refundedAt, sale.refunded > 0 {
            add(.refundedTransactions, 1, on: refundedAt)
            add(.refunds, min(sale.refunded, sale.price), on: refundedAt, currency: sale.currency)
        }
        return contribution
    }
}

extension OneTimeSale {
    /// An App Store one-time purchase (consumable, non-consumable, non-renewing) as signed: `nil` for a subscription's
    /// transaction or one without a price. A revocation refunds it, in part when Apple gives a percentage.
    public init?(appStore transaction: TransactionPayload) {
        guard transaction.type != "Auto-Renewable Subscription", let price = transaction.price, price > 0, let currency = transaction.currency,
            let purchased = transaction.purchaseDate
        else { return nil }
        let refunded =
            transaction.revocationDate == nil
            ? 0 : transaction.revocationPercentage.map { MonthlyValue.divided(price &* Int64($0), by: 100_000) } ?? price
        self.init(
            id: transaction.transactionId, store: .appStore, environment: transaction.environment ?? .unknown,
            productId: transaction.productId, soldAt: Date(timeIntervalSince1970: Double(purchased) / 1000), price: price,
            currency: currency.uppercased(),
            refundedAt: transaction.revocationDate.map { Date(timeIntervalSince1970: Double($0) / 1000) }, refunded: refunded)
    }
}
