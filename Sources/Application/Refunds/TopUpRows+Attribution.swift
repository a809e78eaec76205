import Credits
import Persistence

// A top-up's share of its bucket, first in, first out (PurchaseConsumption): a credit rule, so it is applied here, to
// the rows Persistence read, not in the read.
extension CreditLedger.TopUpRows {
    /// What the top-up credited and what of it was spent.
    var consumption: PurchaseConsumption { PurchaseConsumption.topUp(transactionId, meter: meter, entries: entries) }

    /// The spends that took from the top-up's own credits, newest first, at most `limit`.
    func usage(limit: Int) -> [CreditLedger.UsageRecord] {
        let spends = PurchaseConsumption.attribution(ofTopUp: transactionId, entries: entries).spends
        return spends.keys.filter { entries[$0].reason == "usage" }.sorted(by: >).prefix(limit).map {
            CreditLedger.UsageRecord(at: dates[$0], meter: meter, amount: spends[$0]!)
        }
    }
}
