import AppStoreModels
import Foundation
import Subscriptions

/// The credit rules of a consumable purchase: its top-up credits go to the account it was credited to (through its
/// `appAccountToken` or a claim); a refund takes back what is left of them (never below zero), a reversal gives it
/// back.
public enum TopUpCredits {
    /// The operations due for `transaction` credited to `account`; empty when the product is not a top-up.
    public static func operationsDue(
        _ transaction: TransactionPayload, account: AccountID, catalogue: TierCatalogue, ledger: LedgerSnapshot
    ) -> [LedgerOperation] {
        guard let topUp = catalogue.topUp(ofProduct: transaction.productId) else { return [] }
        let bucket = CreditBucket.topUp(account: account, meter: topUp.meter)
        let granted = topUp.credits * Int64(max(transaction.quantity ?? 1, 1))
        var operations: [LedgerOperation] = []
        let grantKey = "topup:\(transaction.transactionId)"
        if !ledger.isPosted(grantKey) {
            operations.append(.post(LedgerEntry(operationKey: grantKey, bucket: bucket.key, delta: granted, reason: "top-up \(topUp.id)"), opening: bucket))
        }
        let refundKey = "refund:\(transaction.transactionId):\(bucket.key)"
        let refund = ledger.entries.first { $0.operationKey == refundKey }
        let reversalKey = "reversed:\(refundKey)"
        if transaction.revocationDate != nil, refund == nil {
            let available = ledger.balance(of: bucket.key) + (ledger.isPosted(grantKey) ? 0 : granted)
            let take = min(granted, max(available, 0))
            if take > 0 {
                operations.append(.post(LedgerEntry(operationKey: refundKey, bucket: bucket.key, delta: -take, reason: "top-up refunded"), opening: nil))
            }
        } else if transaction.revocationDate == nil, let refund, !ledger.isPosted(reversalKey) {
            operations.append(.post(LedgerEntry(operationKey: reversalKey, bucket: bucket.key, delta: -refund.delta, reason: "refund reversed"), opening: nil))
        }
        return operations
    }
}
