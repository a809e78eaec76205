import AppStoreModels
import Entitlements
import Foundation

extension EntitlementRecord {
    /// The facts of an App Store one-time purchase (a non-consumable, or a non-renewing subscription) as one signed
    /// version of its transaction says them: bought at its purchase date; taken back at its revocation date — by a
    /// refund, or by Family Sharing (`FAMILY_REVOKE`, a `REVOKE` notification, which may carry no revocation date and
    /// then ends it when signed). A `REFUND_REVERSED` version, signed later, carries no revocation: it is the newest.
    /// - Parameters:
    ///   - notificationType: the notification that carried it; `nil` for a transaction an app posted.
    ///   - signedDate: when the version was signed (the notification's `signedDate`, else the transaction's).
    public init(appStorePurchase transaction: TransactionPayload, notificationType: String?, signedDate: Int64?) {
        let type = notificationType.map(NotificationType.init)
        let signed = signedDate ?? transaction.signedDate ?? 0
        let revokedByFamily = type == .revoke || transaction.revocationType == "FAMILY_REVOKE"
        let endedAt = transaction.revocationDate ?? (type == .revoke ? signed : nil)
        let purchased = transaction.purchaseDate ?? transaction.originalPurchaseDate ?? signed
        self.init(
            id: transaction.transactionId, kind: .purchase, store: .appStore, productId: transaction.productId,
            startsAt: Date(timeIntervalSince1970: Double(purchased) / 1000),
            endedAt: endedAt.map { Date(timeIntervalSince1970: Double($0) / 1000) },
            endReason: endedAt == nil ? nil : revokedByFamily ? .revoke : .refund,
            environment: transaction.environment, ownership: transaction.inAppOwnershipType.map(Ownership.init), signedDate: signed)
    }
}
