import AppStoreModels
import Foundation

@testable import Subscriptions

/// Builds events of one subscription at given instants (milliseconds), as Apple would sign them. Period `n` is the
/// transaction `<otid>-<n>` covering days `30n ..< 30(n+1)` after ``start``.
struct EventFactory {
    var originalTransactionId = "2000000000000001"
    var account = UUID(uuidString: "6f1d4d5e-8a1a-4b53-9c1e-1b2f3a4b5c6d")!
    let day: Int64 = 86_400_000
    let start: Int64 = 1_767_225_600_000  // 2026-01-01T00:00:00Z

    func event(
        _ type: String, _ subtype: String? = nil, signedAt: Int64, period: Int = 0, status: Int32? = 1,
        autoRenew: Int32? = 1, product: String = "pro.monthly", autoRenewProduct: String? = nil,
        expirationIntent: Int32? = nil, gracePeriodEnd: Int64? = nil, offerType: Int32? = nil,
        offerDiscountType: String? = nil, revocationDate: Int64? = nil, revocationType: String? = nil,
        ownership: String = "PURCHASED", purchaseDate: Int64? = nil, expiresDate: Int64? = nil,
        priceIncreaseStatus: Int32? = nil, renewalInfo: Bool = true, id: String = UUID().uuidString.lowercased()
    ) -> SubscriptionEvent {
        var transaction = TransactionPayload(
            transactionId: "\(originalTransactionId)-\(period)", originalTransactionId: originalTransactionId,
            productId: product, bundleId: "com.example.app", environment: .sandbox, signedDate: signedAt)
        transaction.type = "Auto-Renewable Subscription"
        transaction.purchaseDate = purchaseDate ?? start + Int64(period) * 30 * day
        transaction.expiresDate = expiresDate ?? start + Int64(period + 1) * 30 * day
        transaction.appAccountToken = account.uuidString
        transaction.offerType = offerType ?? (offerDiscountType == nil ? nil : 1)
        transaction.offerDiscountType = offerDiscountType
        transaction.revocationDate = revocationDate
        transaction.revocationType = revocationType
        transaction.inAppOwnershipType = ownership
        var renewal = RenewalInfoPayload(
            originalTransactionId: originalTransactionId, productId: product, environment: .sandbox, signedDate: signedAt)
        renewal.autoRenewStatus = autoRenew
        renewal.autoRenewProductId = autoRenewProduct ?? product
        renewal.expirationIntent = expirationIntent
        renewal.gracePeriodExpiresDate = gracePeriodEnd
        renewal.isInBillingRetryPeriod = status == 3 || status == 4
        renewal.priceIncreaseStatus = priceIncreaseStatus
        return SubscriptionEvent(
            id: id, notificationType: type, subtype: subtype, signedDate: signedAt, appleStatus: status,
            environment: .sandbox, transaction: transaction, renewalInfo: renewalInfo ? renewal : nil)
    }

    func date(_ milliseconds: Int64) -> Date { Date(timeIntervalSince1970: Double(milliseconds) / 1000) }

    /// The state the facts of `events` derive, in whatever order they come.
    func derived(_ events: [SubscriptionEvent]) -> SubscriptionState? {
        SubscriptionFacts(events: events).flatMap { Lifecycle.derive($0) }?.state
    }
}
