import AppStoreModels
import Foundation

/// One scenario file: events Apple (or the app) sends, in the order they happened, and what a customer must see
/// afterwards. Times are days after 2026-01-01T00:00:00Z.
struct Scenario: Decodable {
    var name: String
    /// Where the expectation comes from (Apple's documentation, the product contract).
    var source: String
    var events: [Event]
    var expect: Expectation

    struct Event: Decodable {
        /// `TYPE` or `TYPE/SUBTYPE` of a notification.
        var notification: String?
        /// The account alias that posted the transaction (a claim).
        var claim: String?
        /// A Server API snapshot with this status.
        var api: Int32?
        var at: Double
        var status: Int32?
        var env: String?
        var tx: Transaction
        var renewal: Renewal?
    }

    struct Transaction: Decodable {
        var id: String
        var subscription: String?
        var product: String
        var from: Double
        var to: Double?
        /// `webOrderLineItemId`; restored copies share it.
        var period: String?
        var price: Int64?
        var offerType: Int32?
        var offerDiscount: String?
        var offerPeriod: String?
        var revoked: Double?
        var revocationType: String?
        var percentage: Int32?
        var upgraded: Bool?
        var token: String?
        var ownership: String?
        var type: String?
        var quantity: Int32?
        /// When this copy was signed, when not at the event.
        var signedAt: Double?
    }

    struct Renewal: Decodable {
        var autoRenew: Int32?
        var next: String?
        var retry: Bool?
        var grace: Double?
        var intent: Int32?
        var priceIncrease: Int32?
    }

    struct Expectation: Decodable {
        var at: Double
        var account: String
        var state: String
        var entitled: Bool
        var tier: String?
        var product: String?
        var status: String?
        var endReason: String?
        var expiresAt: Double?
        var willRenew: Bool?
        /// Spendable credits per meter (cycle + top-up + daily).
        var credits: [String: Int64]
        var topUp: [String: Int64]?
        /// Accounts that must own nothing.
        var ownsNothing: [String]?
    }

    static let base: Int64 = 1_767_225_600_000

    static func milliseconds(_ days: Double) -> Int64 { base + Int64((days * 86_400_000).rounded()) }
    static func date(_ days: Double) -> Date { Date(timeIntervalSince1970: Double(milliseconds(days)) / 1000) }

    static let accounts: [String: UUID] = [
        "A": UUID(uuidString: "0a000000-0000-4000-8000-00000000000a")!,
        "B": UUID(uuidString: "0b000000-0000-4000-8000-00000000000b")!,
        "C": UUID(uuidString: "0c000000-0000-4000-8000-00000000000c")!,
    ]

    static func account(_ alias: String) -> UUID { accounts[alias] ?? UUID(uuidString: alias)! }

    static let bundleId = "com.example.scenarios"

    func payload(_ event: Event) -> TransactionPayload {
        let tx = event.tx
        let environment = AppStoreEnvironment(rawValue: event.env ?? "Sandbox")
        var transaction = TransactionPayload(
            transactionId: tx.id, originalTransactionId: tx.subscription ?? "1000", productId: tx.product,
            bundleId: Self.bundleId, environment: environment, signedDate: Self.milliseconds(tx.signedAt ?? event.at))
        transaction.type = tx.type ?? "Auto-Renewable Subscription"
        transaction.purchaseDate = Self.milliseconds(tx.from)
        transaction.originalPurchaseDate = Self.milliseconds(tx.from)
        transaction.expiresDate = tx.to.map(Self.milliseconds)
        transaction.webOrderLineItemId = tx.period
        transaction.price = tx.price
        transaction.currency = "USD"
        transaction.offerType = tx.offerType
        transaction.offerDiscountType = tx.offerDiscount
        transaction.offerPeriod = tx.offerPeriod
        transaction.revocationDate = tx.revoked.map(Self.milliseconds)
        transaction.revocationType = tx.revocationType ?? tx.revoked.map { _ in "REFUND_FULL" }
        transaction.revocationPercentage = tx.percentage
        transaction.revocationReason = tx.revoked.map { _ in 0 }
        transaction.isUpgraded = tx.upgraded
        transaction.appAccountToken = tx.token.map { Self.account($0).uuidString.lowercased() }
        transaction.inAppOwnershipType = tx.ownership ?? "PURCHASED"
        transaction.quantity = tx.quantity ?? 1
        transaction.transactionReason = "PURCHASE"
        return transaction
    }

    func renewalPayload(_ event: Event) -> RenewalInfoPayload? {
        guard let renewal = event.renewal else { return nil }
        var info = RenewalInfoPayload(
            originalTransactionId: event.tx.subscription ?? "1000", productId: event.tx.product,
            environment: AppStoreEnvironment(rawValue: event.env ?? "Sandbox"), signedDate: Self.milliseconds(event.at))
        info.autoRenewStatus = renewal.autoRenew ?? 1
        info.autoRenewProductId = renewal.next ?? event.tx.product
        info.isInBillingRetryPeriod = renewal.retry
        info.gracePeriodExpiresDate = renewal.grace.map(Self.milliseconds)
        info.expirationIntent = renewal.intent
        info.priceIncreaseStatus = renewal.priceIncrease
        info.appAccountToken = event.tx.token.map { Self.account($0).uuidString.lowercased() }
        return info
    }
}
