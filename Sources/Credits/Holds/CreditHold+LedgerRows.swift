import Entitlements
import Foundation
import Subscriptions

// The ledger rows a hold writes, as the credit rules shape them: pure, so the order of a hold's end and a reset, an
// upgrade or a refund is property-tested without a database (CreditsTests); Persistence only writes them.
extension CreditHold {
    /// Where each bucket of `since` takes a debit of `account`'s hold back now (docs/credits.md, "Where credits go
    /// back"): the top-up an upgrade carried the bucket's unspent credits to, while that carry stands (a refund of the
    /// upgrade that took it takes them there: ``refundTakes(of:debits:since:account:key:)``); else a cycle
    /// window a refund took from since the hold (or, the App Store's, whose period stands refunded, sql/0060), still
    /// the account's, open or not — the refund takes them there
    /// (``refundTakes(of:debits:since:account:key:)``), so that its reversal gives them back; else the bucket itself
    /// while it is among `open` and no refund took from it (a top-up's refund takes back its own purchase's credits,
    /// not those held; a claw-back takes a number of credits and claims what was held, sql/0057); else nowhere.
    public static func destinations(_ since: [BucketSince], open: Set<String>, account: AccountID) -> [String: String] {
        var destinations: [String: String] = [:]
        for bucket in since {
            if let carried = bucket.carriedTo {
                destinations[bucket.bucket] = carried
            } else if bucket.refund(takingFor: account) != nil
                || (open.contains(bucket.bucket) && (CreditBucket.Kind(bucket.kind ?? "") == .topUp || !bucket.refunded))
            {
                destinations[bucket.bucket] = bucket.bucket
            }
        }
        return destinations
    }

    /// What a standing refund takes of what `outcome` gives back (``destinations(_:open:account:)``): per debit, the
    /// credits that went back (after claims took their part) to its own window, which the refund took from or found
    /// empty (``BucketSince/refund(takingFor:)``), or through a carry-over that a refund of the upgrade took
    /// (``BucketSince/carryTakenBy``), to its top-up. Each under the refund's key and the return's,
    /// `<refund>:back:<key(index)>` — a `refund:` row of the refund's stamp, which the refund's later derivations count
    /// as theirs and its reversal gives back (docs/credits.md, "Held credits of a refunded window", "Where credits go
    /// back"). The bucket then holds what the refund would have left had the credits come back before it.
    public static func refundTakes(
        of outcome: HoldSettlement.Outcome, debits: [HoldSettlement.Debit], since: [BucketSince], account: AccountID, key: (Int) -> String
    ) -> [LedgerEntry] {
        var takes: [LedgerEntry] = []
        for (index, debit) in debits.enumerated() {
            guard let bucket = since.first(where: { $0.bucket == debit.bucket }) else { continue }
            let refund: String
            let target: String
            if let window = bucket.refund(takingFor: account) {
                (refund, target) = (window, debit.bucket)
            } else if let carried = bucket.carriedTo, let taken = bucket.carryTakenBy {
                (refund, target) = (taken, carried)
            } else {
                continue
            }
            let back = outcome.returns.filter { $0.from == debit.bucket && $0.bucket == target }.reduce(0) { $0 + $1.amount }
            guard back > 0 else { continue }
            takes.append(LedgerEntry(operationKey: "\(refund):back:\(key(index))", bucket: target, delta: -back, reason: "refund"))
        }
        return takes
    }

    /// ``destinations(_:open:account:)`` of a hold nothing was posted to since it was taken (one taken and ended in the same
    /// group of requests): no carry, no refund, so each debit's bucket takes its credits back while it is `open`.
    public static func destinations(ofUntouched debits: [HoldSettlement.Debit], open: Set<String>) -> [String: String] {
        Dictionary(uniqueKeysWithValues: Set(debits.map(\.bucket)).filter(open.contains).map { ($0, $0) })
    }

    /// The unpaid claims on each bucket of `since`, less what `paid` (by claim key) says earlier ends of the same
    /// transaction paid of them.
    public static func claims(_ since: [BucketSince], less paid: [String: Int64] = [:]) -> [String: [HoldSettlement.Claim]] {
        var claims: [String: [HoldSettlement.Claim]] = [:]
        for bucket in since {
            let open = (bucket.claims ?? []).map { HoldSettlement.Claim(key: $0.key, outstanding: $0.outstanding - paid[$0.key, default: 0]) }
                .filter { $0.outstanding > 0 }
            if !open.isEmpty { claims[bucket.bucket] = open }
        }
        return claims
    }

    /// The rows of what `debits` give back by `outcome`: per debit, its return row keyed `key(index)` with all that
    /// went back before claims took their part, then the rows of what paid claims (`claim:…:paid:<payer(index)>`,
    /// CreditClaims), so the balance moves by what the customer got back.
    public static func returnEntries(
        of outcome: HoldSettlement.Outcome, debits: [HoldSettlement.Debit], reason: String, key: (Int) -> String, payer: (Int) -> String
    ) -> [LedgerEntry] {
        func index(_ bucket: String) -> Int { debits.firstIndex { $0.bucket == bucket } ?? 0 }
        var entries: [LedgerEntry] = []
        for (position, debit) in debits.enumerated() {
            let gross = outcome.gross(from: debit.bucket)
            guard gross > 0, let target = outcome.destination(of: debit.bucket) else { continue }
            entries.append(LedgerEntry(operationKey: key(position), bucket: target, delta: gross, reason: reason))
        }
        return entries
            + outcome.payments.map { payment in
                LedgerEntry(
                    operationKey: CreditClaims.paymentKey(claim: payment.claim, payer: payer(index(payment.from))), bucket: payment.bucket,
                    delta: -payment.amount, reason: "claim paid (credits came back)")
            }
    }

    /// The key of what a hold's end gives back of its debit `index`, `hold-return:<id>:<n>`: keyed by the debit it gives
    /// back (a hold takes once from each bucket), not by its place among the returns, so two ends of one hold, however
    /// they raced, write the same keys, and the second's are skipped.
    public static func returnKey(_ id: UUID, _ index: Int) -> String { "hold-return:\(id.lowercasedText):\(index)" }

    /// The ledger rows of a new hold: its debits (reason `hold`), `hold:<id>:<n>`.
    public static func debitEntries(of hold: CreditHold) -> [LedgerEntry] {
        hold.debits.enumerated().map { index, debit in
            LedgerEntry(operationKey: debitKey(hold.id, index), bucket: debit.bucket, delta: -debit.amount, reason: "hold")
        }
    }

    /// The ledger rows of a hold's end: what goes back (`hold-return:…`) and the charged part as usage
    /// (`hold-charge:…`, offset first, so the bucket's balance is unchanged by it and the usage analytics count it on the
    /// day it settled). Where a debit's rest goes back to its own bucket, the charged part's offset is in its return
    /// row (`hold-return:…` is then the debit given back whole): a settle of part of a hold writes two rows a debit, not
    /// three (issue 53's pace).
    public static func endEntries(of hold: CreditHold, outcome: HoldSettlement.Outcome) -> [LedgerEntry] {
        let id = hold.id.lowercasedText
        func returnKey(_ index: Int) -> String { Self.returnKey(hold.id, index) }
        var entries = returnEntries(of: outcome, debits: hold.debits, reason: "hold returned", key: returnKey, payer: returnKey)
        // The charge is taken from the front of the debits (HoldSettlement): the n-th charged is the n-th debit's.
        for (index, charged) in outcome.charged.enumerated() {
            if outcome.destination(of: charged.bucket) == charged.bucket,
                let returned = entries.firstIndex(where: { $0.operationKey == returnKey(index) })
            {
                entries[returned].delta += charged.amount
            } else {
                entries.append(
                    LedgerEntry(
                        operationKey: "hold-charge:\(id):\(index):offset", bucket: charged.bucket, delta: charged.amount, reason: "hold charged"))
            }
            entries.append(LedgerEntry(operationKey: "hold-charge:\(id):\(index)", bucket: charged.bucket, delta: -charged.amount, reason: "usage"))
        }
        return entries
    }
}
