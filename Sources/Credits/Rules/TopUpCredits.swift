import AppStoreModels
import Foundation
import Subscriptions

/// The credit rules of a consumable purchase: its top-up credits go to the account it was credited to (through its
/// `appAccountToken` or a claim); a refund takes back what is left of them (never below zero) — a prorated one its share
/// of them — and a reversal gives it back.
public enum TopUpCredits {
    /// One sale of a top-up product, in any store: its id (the App Store's transaction, Stripe's PaymentIntent), the
    /// product, how many, and whether it was taken back.
    public struct Sale: Sendable, Equatable {
        public var id: String
        public var productId: String
        public var quantity: Int64
        public var revoked: Bool
        /// Units a quantity-based partial refund took back (Play's), while the sale itself stands.
        public var refundedQuantity: Int64
        /// The share a prorated refund took back, in milli-percent below 100 % (the App Store's `revocationPercentage`
        /// of a `REFUND_PRORATED`, "based on consumption data", of the whole quantity: 1 of 3 packs is about 33,333);
        /// `nil`: a revoked sale is taken back whole.
        public var refundedMilliPercent: Int32?

        public init(
            id: String, productId: String, quantity: Int64, revoked: Bool, refundedQuantity: Int64 = 0, refundedMilliPercent: Int32? = nil
        ) {
            self.id = id
            self.productId = productId
            self.quantity = quantity
            self.revoked = revoked
            self.refundedQuantity = refundedQuantity
            self.refundedMilliPercent = refundedMilliPercent
        }

        /// The sale an App Store transaction (its newest version) is.
        public init(_ transaction: TransactionPayload) {
            self.init(
                id: transaction.transactionId, productId: transaction.productId, quantity: Int64(max(transaction.quantity ?? 1, 1)),
                revoked: transaction.revocationDate != nil,
                refundedMilliPercent: PaidPeriod.Revocation.isProrated(
                    type: transaction.revocationType, milliPercent: transaction.revocationPercentage)
                    ? transaction.revocationPercentage : nil)
        }
    }

    /// The operations due for `transaction` credited to `account`; empty when the product is not a top-up.
    public static func operationsDue(
        _ transaction: TransactionPayload, account: AccountID, catalogue: TierCatalogue, ledger: LedgerSnapshot
    ) -> [LedgerOperation] {
        operationsDue(Sale(transaction), account: account, catalogue: catalogue, ledger: ledger)
    }

    /// The operations due for `sale` credited to `account`; empty when the product is not a top-up.
    public static func operationsDue(_ sale: Sale, account: AccountID, catalogue: TierCatalogue, ledger: LedgerSnapshot) -> [LedgerOperation] {
        guard let topUp = catalogue.topUp(ofProduct: sale.productId) else { return [] }
        let bucket = CreditBucket.topUp(account: account, meter: topUp.meter)
        let granted = topUp.credits * max(sale.quantity, 1)
        var operations: [LedgerOperation] = []
        let grantKey = "topup:\(sale.id)"
        if !ledger.isPosted(grantKey) {
            operations.append(
                .post(LedgerEntry(operationKey: grantKey, bucket: bucket.key, delta: granted, reason: "top-up \(topUp.id)"), opening: bucket))
        }
        // Each refund the sale has had since the last reversal is a generation of keys: the first `refund:<sale>:<bucket>`,
        // those after a reversal `…:r<n>`, so a refund after a `REFUND_REVERSED` takes again (Apple's REFUND claws back
        // whenever it comes; until 2026-12-07 the first refund's key stood and a second took nothing).
        let firstKey = "refund:\(sale.id):\(bucket.key)"
        var generation = 0
        while ledger.isPosted("reversed:\(generationKey(firstKey, generation))") { generation += 1 }
        let refundKey = generationKey(firstKey, generation)
        // What this generation's refunds owed so far: the refund's row, the rows a larger share of it added (`…:o<owed>`)
        // and each partial refund's (`…:q<units>`). A take-back's row is all it owed; what it could not take is its claim
        // (CreditClaims), paid when the credits come back.
        let takes = ledger.entries.filter {
            $0.operationKey == refundKey || $0.operationKey.hasPrefix(refundKey + ":q") || $0.operationKey.hasPrefix(refundKey + ":o")
        }
        let taken = takes.reduce(Int64(0)) { $0 - $1.delta }
        let partial = min(max(sale.refundedQuantity, 0), max(sale.quantity, 1))
        let available = ledger.balance(of: bucket.key) + (ledger.isPosted(grantKey) ? 0 : granted)
        if sale.revoked {
            // A prorated refund owes its share, rounded up as a subscription's does (``Proration/clawback(granted:milliPercent:)``);
            // a larger share or a full refund of the same sale later (its newest version) takes the difference.
            let owed = sale.refundedMilliPercent.map { Proration.clawback(granted: granted, milliPercent: $0) } ?? granted
            let key = ledger.isPosted(refundKey) ? "\(refundKey):o\(owed)" : refundKey
            if !ledger.isPosted(key) {
                operations += CreditClaims.takeBack(key, bucket: bucket.key, owed: owed - taken, available: available, reason: "top-up refunded")
            }
        } else if partial > 0, !ledger.isPosted("\(refundKey):q\(partial)") {
            // A partial refund takes its share of the units, less what earlier ones took, from what is left.
            operations += CreditClaims.takeBack(
                "\(refundKey):q\(partial)", bucket: bucket.key, owed: topUp.credits * partial - taken, available: available,
                reason: "top-up partly refunded")
        } else if ledger.isPosted(refundKey), !ledger.isPosted("reversed:\(refundKey)") {
            // Every row of the refund undone — its takes, their claims, what paid them — so the claims close and the
            // customer has back what the refund took, whenever the credits it claimed came back.
            for take in takes where !take.operationKey.hasPrefix(refundKey + ":q") {
                for row in CreditClaims.rows(of: take.operationKey, in: ledger) {
                    operations.append(
                        .post(
                            LedgerEntry(
                                operationKey: "reversed:\(row.operationKey)", bucket: row.bucket, delta: -row.delta, reason: "refund reversed"),
                            opening: nil))
                }
            }
        }
        return operations
    }

    /// The key of a sale's refund after `generation` reversals: the first `refund:<sale>:<bucket>`, then `…:r<n>`.
    static func generationKey(_ first: String, _ generation: Int) -> String {
        generation == 0 ? first : "\(first):r\(generation)"
    }
}
