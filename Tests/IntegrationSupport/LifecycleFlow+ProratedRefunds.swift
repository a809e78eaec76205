import AppStoreModels
import Foundation
import LocalSigning

/// The periods and refunds of the claw-back tests, as Apple sends them.
extension LifecycleFlow {
    /// Last month's period, bought 40 days before `now` (milliseconds), and this month's, renewed 10 days before it.
    mutating func sendLastAndThisMonth(now: Int64) async throws -> (lastMonth: SimulatedEvent, thisMonth: SimulatedEvent) {
        let day: Int64 = 86_400_000
        let otid = originalTransactionId
        func period(_ event: inout SimulatedEvent, _ index: Int64, from: Int64, to: Int64) {
            event.transaction?.transactionId = "\(otid)\(index)"
            event.transaction?.webOrderLineItemId = "\(otid).\(index)"
            event.transaction?.purchaseDate = from
            event.transaction?.originalPurchaseDate = now - 40 * day
            event.transaction?.expiresDate = to
            event.renewalInfo?.renewalDate = to
        }
        let lastMonth = try await send(.subscribe) { period(&$0, 0, from: now - 40 * day, to: now - 10 * day) }
        let thisMonth = try await send(.renew) { period(&$0, 1, from: now - 10 * day, to: now + 20 * day) }
        return (lastMonth, thisMonth)
    }

    /// Apple's REFUND of `transaction`, prorated at `milliPercent` (`REFUND_PRORATED`), or with `reversed` its
    /// REFUND_REVERSED; the subscription renews on.
    mutating func sendProratedRefund(of transaction: TransactionPayload, milliPercent: Int32 = 50_000, reversed: Bool = false) async throws {
        try await send(.refund) { event in
            var refunded = transaction
            refunded.signedDate = event.signedDate
            if reversed {
                event.notificationType = "REFUND_REVERSED"
            } else {
                refunded.revocationDate = event.signedDate
                refunded.revocationReason = 0
                refunded.revocationType = "REFUND_PRORATED"
                refunded.revocationPercentage = milliPercent
            }
            event.transaction = refunded
            event.status = 1
            event.renewalInfo?.autoRenewStatus = 1
        }
    }

    /// Apple's REFUND of `transaction` in full (`REFUND_FULL`: the subscription is revoked), or with `reversed` its
    /// REFUND_REVERSED (the transaction signed again without the revocation; the subscription active again).
    mutating func sendFullRefund(of transaction: TransactionPayload, reversed: Bool = false) async throws {
        try await send(.refund) { event in
            var refunded = transaction
            refunded.signedDate = event.signedDate
            if reversed {
                event.notificationType = "REFUND_REVERSED"
                event.status = 1
            } else {
                refunded.revocationDate = event.signedDate
                refunded.revocationReason = 0
                refunded.revocationType = "REFUND_FULL"
                event.status = 5
            }
            event.transaction = refunded
        }
    }
}
