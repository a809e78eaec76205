/// What a take-back owed but could not take. A top-up's refund takes back its credits from what its bucket holds;
/// credits spent, or out in a hold, are not there to take. The refund then posts
/// all it owes and a claim row giving the shortfall back (`claim:<take-back key>`), so the bucket loses what it has
/// and the claim remembers the rest. Credits of a debit made before the claim that come back to the bucket pay it
/// first (``HoldSettlement``), each payment a row `claim:<…>:paid:<payer>` taking them again; a reversal of the
/// refund gives back what the refund, its claim and its payments took together. A refund's end is then the same
/// whether the credits came back before it or after.
public enum CreditClaims {
    /// The claim row of the take-back `takeKey`.
    public static func key(of takeKey: String) -> String { "claim:\(takeKey)" }

    /// The row by which credits coming back under `payer` (a hold's return key, a reversal's) pay `claim`.
    public static func paymentKey(claim: String, payer: String) -> String { "\(claim):paid:\(payer)" }

    /// Whether `operationKey` is a claim's row or a payment's: bookkeeping of a take-back, not credits spent.
    public static func isClaim(_ operationKey: String) -> Bool { operationKey.hasPrefix("claim:") }

    /// The rows of the take-back `takeKey`: its own, its claim's and the claim's payments'.
    public static func rows(of takeKey: String, in ledger: LedgerSnapshot) -> [LedgerEntry] { rows(of: takeKey, in: ledger.entries) }

    /// The rows of the take-back `takeKey` among `entries`.
    static func rows(of takeKey: String, in entries: [LedgerEntry]) -> [LedgerEntry] {
        let claim = key(of: takeKey)
        return entries.filter { $0.operationKey == takeKey || $0.operationKey == claim || $0.operationKey.hasPrefix(claim + ":paid:") }
    }

    /// What the claims on `bucket` still wait for: its claim rows less their payments, less both of a claim whose
    /// take-back was reversed (`reversed:claim:…` rows undo the claim and every payment).
    static func outstanding(on bucket: String, in ledger: LedgerSnapshot) -> Int64 {
        ledger.entries(of: bucket).reduce(0) { outstanding, row in
            isClaim(row.operationKey) || row.operationKey.hasPrefix("reversed:claim:") ? outstanding + row.delta : outstanding
        }
    }

    /// The rows of taking `owed` credits back from `bucket` when `available` are there: the take-back of all of them
    /// and, when fewer are there, the claim on the rest.
    public static func takeBack(_ takeKey: String, bucket: String, owed: Int64, available: Int64, reason: String) -> [LedgerOperation] {
        guard owed > 0 else { return [] }
        var operations: [LedgerOperation] = [.post(LedgerEntry(operationKey: takeKey, bucket: bucket, delta: -owed, reason: reason), opening: nil)]
        let short = owed - min(owed, max(available, 0))
        if short > 0 {
            operations.append(
                .post(
                    LedgerEntry(operationKey: key(of: takeKey), bucket: bucket, delta: short, reason: "claim: what the refund could not take"),
                    opening: nil))
        }
        return operations
    }
}
