extension LedgerSnapshot {
    /// The credits taken from `bucket` by holds that have not ended, as the ledger shows them: each hold's debit row
    /// (`hold:<id>:<n>`) without a row of its end (`hold-return:<id>:<n>`, `hold-charge:<id>:<n>`), which every end that
    /// gives back or charges anything writes. None of a window's count once a refund took from it (not reversed): what
    /// comes back to it is the refund's to take (``CreditHold/refundTakes(of:debits:since:account:key:)``), not a
    /// claw-back's to claim (a claw-back takes from live windows, which such a window is not). An end whose credits all lapsed writes no
    /// row; it lapses them only from a bucket no longer open to the account, which a claw-back does not take from.
    func heldOut(of bucket: CreditBucket) -> Int64 {
        guard !isRefundedWindow(bucket) else { return 0 }
        return entries(of: bucket.key).reduce(0) { held, row in
            guard row.operationKey.hasPrefix("hold:"), row.delta < 0 else { return held }
            let debit = row.operationKey.dropFirst("hold:".count)
            return isPosted("hold-return:\(debit)") || isPosted("hold-charge:\(debit)") ? held : held - row.delta
        }
    }

    /// The credits of `bucket` that may still come back to it: those out in open holds (``heldOut(of:)``) and those of
    /// spends not given back (`spend:…:<n>` without its `:reversed`), which a reversal returns within its window. None
    /// of a refunded window's, as for holds.
    func creditsOut(of bucket: CreditBucket) -> Int64 {
        guard !isRefundedWindow(bucket) else { return 0 }
        let spent = entries(of: bucket.key).reduce(Int64(0)) { spent, row in
            guard row.operationKey.hasPrefix("spend:"), row.delta < 0, !isPosted(row.operationKey + ":reversed") else { return spent }
            return spent - row.delta
        }
        return heldOut(of: bucket) + spent
    }

    /// What follows the key of a refund's mark of a window it found all out (`<removal>:pending`, posted before the
    /// removal's row, which nets it; SubscriptionCredits.markTaken).
    static let markSuffix = ":pending"

    /// A window a refund took from (not reversed): credits coming back to it are the refund's. Not one the refund only
    /// marked, having found it all out: the rules read it as before the mark — an upgrade then carries its credits
    /// out — and the mark is for the reads of holds' ends. (A claw-back takes nothing of a window refunded in full,
    /// marked or not: SubscriptionCredits.Plan.clawBack.)
    private func isRefundedWindow(_ bucket: CreditBucket) -> Bool {
        bucket.kind != .topUp
            && entries(of: bucket.key).contains {
                $0.operationKey.hasPrefix("refund:") && $0.delta < 0 && !isPosted("reversed:" + $0.operationKey)
                    && !isPosted($0.operationKey + Self.markSuffix)
            }
    }
}
