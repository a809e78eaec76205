extension LedgerSnapshot {
    /// The credits taken from `bucket` by holds that have not ended, as the ledger shows them: each hold's debit row
    /// (`hold:<id>:<n>`) without a row of its end (`hold-return:<id>:<n>`, `hold-charge:<id>:<n>`), which every end that
    /// gives back or charges anything writes. None of a window's count once a refund took from it (not reversed): their
    /// credits cannot come back to it (``CreditHold/destinations(_:open:)``). An end whose credits all lapsed writes no
    /// row; it lapses them only from a bucket no longer open to the account, which a claw-back does not take from.
    func heldOut(of bucket: CreditBucket) -> Int64 {
        let rows = entries(of: bucket.key)
        if bucket.kind != .topUp,
            rows.contains(where: { $0.operationKey.hasPrefix("refund:") && $0.delta < 0 && !isPosted("reversed:" + $0.operationKey) })
        {
            return 0
        }
        return rows.reduce(0) { held, row in
            guard row.operationKey.hasPrefix("hold:"), row.delta < 0 else { return held }
            let debit = row.operationKey.dropFirst("hold:".count)
            return isPosted("hold-return:\(debit)") || isPosted("hold-charge:\(debit)") ? held : held - row.delta
        }
    }
}
