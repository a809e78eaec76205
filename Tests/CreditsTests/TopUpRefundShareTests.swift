import AppStoreModels
import Credits
import Foundation
import Subscriptions
import Testing

/// What a refund of a consumable takes back, by Apple's fields alone: a `REFUND_PRORATED` below 100 % its share of the
/// whole quantity's credits, rounded up (StoreKit's `revocationPercentage`: "if 1 of 3 items was refunded, the value
/// would be approximately 33.333"); any other revocation all of them.
@Suite("Top-up refunds: a prorated consumable refund takes its share")
struct TopUpRefundShareTests {
    static let account = AccountID("share-account")!
    static let catalogue = TierCatalogue(
        meters: [.init(id: "ai", displayName: "AI")], free: .init(displayName: "Free", allowances: [:]), tiers: [],
        topUps: [.init(id: "pack", meter: "ai", credits: 500)])

    @Test(
        "quantity 3 of 500: prorated 33,333 takes 500, 40,000 takes 600, 1 takes 1, 100,000 all; REFUND_FULL, FAMILY_REVOKE or no type take all whatever the percentage; a reversal gives it back"
    )
    func share() {
        let cases: [(type: String?, percentage: Int32?, taken: Int64)] = [
            ("REFUND_PRORATED", 33_333, 500), ("REFUND_PRORATED", 40_000, 600), ("REFUND_PRORATED", 1, 1), ("REFUND_PRORATED", 100_000, 1_500),
            ("REFUND_PRORATED", nil, 1_500), ("REFUND_FULL", 33_333, 1_500), ("FAMILY_REVOKE", 50_000, 1_500), (nil, 50_000, 1_500),
        ]
        for (type, percentage, taken) in cases {
            var transaction = TransactionPayload(
                transactionId: "c0", originalTransactionId: "c0", productId: "pack", bundleId: "com.example.storekeeper", environment: .sandbox,
                signedDate: 1_000)
            transaction.quantity = 3
            transaction.type = "Consumable"
            var ledger = LedgerSnapshot()
            for operation in TopUpCredits.operationsDue(transaction, account: Self.account, catalogue: Self.catalogue, ledger: ledger) {
                ledger.apply(operation)
            }
            let bucket = CreditBucket.topUp(account: Self.account, meter: "ai").key
            #expect(ledger.balance(of: bucket) == 1_500)
            transaction.revocationDate = 2_000
            transaction.revocationType = type
            transaction.revocationPercentage = percentage
            for _ in 0..<2 {
                for operation in TopUpCredits.operationsDue(transaction, account: Self.account, catalogue: Self.catalogue, ledger: ledger) {
                    ledger.apply(operation)
                }
            }
            #expect(ledger.balance(of: bucket) == 1_500 - taken, "\(type ?? "no type") at \(percentage.map(String.init) ?? "no percentage")")
            (transaction.revocationDate, transaction.revocationType, transaction.revocationPercentage) = (nil, nil, nil)
            for operation in TopUpCredits.operationsDue(transaction, account: Self.account, catalogue: Self.catalogue, ledger: ledger) {
                ledger.apply(operation)
            }
            #expect(ledger.balance(of: bucket) == 1_500, "reversed")
        }
    }
}
