import Credits
import Foundation
import Subscriptions

extension CreditHold {
    /// The rows a hold's end (`keyed` = `hold:<id>`) or a spend given back (`spend:<key>`) posts by `outcome`, as its
    /// group writes them: the end's or the return's rows, then a standing refund's takes of what went back
    /// (``refundTakes(of:debits:since:account:key:)``). A hold's rows are keyed by `<id>` as the group keys them by the
    /// hold's; a reversal's payments and takes name it apart from its return (`reversal:<key>:<n>`), as the API does.
    static func rowsAsWritten(
        _ keyed: String, debits: [HoldSettlement.Debit], outcome: HoldSettlement.Outcome, since: [BucketSince], account: AccountID,
        meter: String, at now: Date
    ) -> [LedgerEntry] {
        guard keyed.hasPrefix("hold:") else {
            let payer = { (index: Int) in "reversal:\(keyed.dropFirst("spend:".count)):\(index)" }
            return returnEntries(of: outcome, debits: debits, reason: "usage reversed", key: { "\(keyed):\($0):reversed" }, payer: payer)
                + refundTakes(of: outcome, debits: debits, since: since, account: account, key: payer)
        }
        let id = String(keyed.dropFirst("hold:".count))
        let hold = CreditHold(
            id: UUID(), account: account, idempotencyKey: id, meter: meter, amount: debits.reduce(0) { $0 + $1.amount }, debits: debits,
            createdAt: now, expiresAt: now)
        let rows =
            endEntries(of: hold, outcome: outcome)
            + refundTakes(of: outcome, debits: debits, since: since, account: account, key: { returnKey(hold.id, $0) })
        return rows.map { row in
            var row = row
            row.operationKey = row.operationKey.replacingOccurrences(of: hold.id.lowercasedText, with: id)
            return row
        }
    }
}
