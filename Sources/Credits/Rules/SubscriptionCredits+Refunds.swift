import Foundation
import Subscriptions

extension SubscriptionCredits.Plan {
    /// A refunded or revoked period loses its credits: all that is left of them for a full refund, a revocation or the
    /// period in force; `ceil(granted × percentage)` for a prorated refund of an earlier period, taken from the
    /// subscription's live windows and the account's top-ups, what is not there claimed (``clawBack(_:of:buckets:stamp:)``).
    /// Every removal is stamped with the revocation date, so a reversal (the revocation disappears from the newest
    /// signed copy) gives back exactly what was removed — what a claw-back took from the top-ups of an account that no
    /// longer owns the subscription too, noted from outside the snapshot (docs/credits.md) — and a second refund later
    /// removes again.
    mutating func settleRefunds(of period: PaidPeriod) {
        guard let stamp = SubscriptionCredits.refundStamp(of: period) else { return }
        let prorated = proration(of: period)
        let buckets = cycleBuckets(of: period)
        if let milliPercent = prorated {
            clawBack(milliPercent, of: period, buckets: buckets, stamp: stamp)
        } else {
            for bucket in buckets {
                let left = ledger.balance(of: bucket.key)
                guard left > 0 else {
                    markTaken(ofCreditsOut: bucket, stamp: stamp)
                    continue
                }
                add(
                    .post(
                        LedgerEntry(operationKey: removalKey("refund:\(stamp):\(bucket.key)"), bucket: bucket.key, delta: -left, reason: "refund"),
                        opening: nil))
            }
            removeCarryOvers(touching: period, of: buckets, stamp: stamp)
        }
    }

    /// A refund takes back the carry-overs at either end of the period — into it (it was the upgrade) and out of its
    /// `buckets` (it was upgraded from): the upgrade's prorated grant counts on the carry-over, and the old window's
    /// unused share is what Apple credited toward the upgrade, so a customer refunded either keeps neither. Keyed by
    /// the carry, so it is taken once whichever end is refunded, and a reversal gives it back. What of it is not in the
    /// top-ups (spent, or out in a hold) is a claim (``CreditClaims``), as a top-up's refund makes: credits of it that
    /// come back later pay it. (Taking only what was there, a refund that found the carry-over all held took nothing and
    /// posted nothing; the held credits came back to the customer, and the next derivation — `replay` — took them.)
    mutating func removeCarryOvers(touching period: PaidPeriod, of buckets: [CreditBucket], stamp: String) {
        let own = Set(buckets.map(\.key))
        // Not a carry reversed as stale (``reverseStaleCarryOvers(into:)``): the upgrade the facts say carries anew.
        let carried = ledger.entries.filter { entry in
            entry.operationKey.hasPrefix("carry:") && entry.operationKey.hasSuffix(":out")
                && (entry.operationKey.hasPrefix("carry:\(period.key):") || own.contains(entry.bucket))
                && !ledger.isPosted("reversed:\(entry.operationKey)")
        }
        for out in carried {
            let inKey = String(out.operationKey.dropLast("out".count)) + "in"
            guard let carriedIn = ledger.entries.first(where: { $0.operationKey == inKey }),
                let keys = carryTakeKeys(stamp: stamp, carriedIn: carriedIn)
            else { continue }
            let operations = CreditClaims.takeBack(
                keys.take, bucket: carriedIn.bucket, owed: standing(carryOver: inKey), available: ledger.balance(of: carriedIn.bucket),
                reason: "refund of an upgrade's carry-over")
            for operation in operations { add(operation) }
            if operations.isEmpty { markTaken(ofCreditsOut: out, into: carriedIn, keys: keys) }
        }
    }

    /// The keys of a refund's take of the carry-over `carriedIn` and of its mark (``markTaken(ofCreditsOut:into:keys:)``):
    /// `refund:<stamp>:<carry in>` and `refund:<stamp>:pending:<carry in>`; or, with `<n>:` before the carry's key, once
    /// every take under the refund's stamp was given back — the refund changed kind and back since (full, then prorated
    /// once a newer period was known, which gave the take back, then full again), so it takes again; nil while one
    /// stands. The counter sits before the carry's key, not after it as a removal's (``removalKey(_:)``): the reads and
    /// the rules name a carry's take by the key's end (sql/0064, ``isTakenByAStandingRefund(carryOver:)``). Until
    /// 2026-12-05 the first take's key stood for good, and the refund, full again, left the carry-over with the customer.
    func carryTakeKeys(stamp: String, carriedIn: LedgerEntry) -> (take: String, mark: String)? {
        let takes = ledger.entries(of: carriedIn.bucket).filter {
            SubscriptionCredits.isCarryTake($0.operationKey, stamp: stamp, carryIn: carriedIn.operationKey)
        }
        guard let again = againCounter(after: takes) else { return nil }
        let prefix = again == 0 ? "refund:\(stamp):" : "refund:\(stamp):\(again):"
        return (prefix + carriedIn.operationKey, prefix + "pending:" + carriedIn.operationKey)
    }

    /// A carry made for credits out (`pending:carry:…`, ``carryOver(into:)``) with nothing come back through it yet is
    /// taken all the same, but its take-back moves nothing and posts no row that the reads of a hold's end would see. So
    /// the take is marked by two rows that net to nothing on the top-up, under the refund's key:
    /// `refund:<stamp>:pending:<carry in>`, then the take's own, the last the reads name (sql/0064; with `<n>:` after the
    /// stamp when the refund takes again, ``carryTakeKeys(stamp:carriedIn:)``). While they stand,
    /// the credits still out that come back through the carry are the refund's to take in the top-up
    /// (``CreditHold/refundTakes(of:debits:since:account:key:)``), as they would have gone with the carry-over had
    /// they come back first; the refund's reversal gives back every row under its key. Until 2026-12-05 the
    /// carry's own reversal was posted (``endCarry(_:)``), which no reversal undid: a database that holds one
    /// keeps it.
    ///
    /// One refund marks it at a time: while another refund's take of the carry stands (the carry's other end refunded
    /// too), what comes back is that refund's. Its reversal gives back what it took, and the derivation that posts the
    /// reversal marks the carry for this refund (reversals come first in a derivation, ``reverseRefundsNoLongerStanding(of:)``),
    /// which then takes what comes back after. Two marks at once named the last for the reads, and its reversal gave
    /// back credits the other refund, still standing, was owed.
    mutating func markTaken(ofCreditsOut out: LedgerEntry, into carriedIn: LedgerEntry, keys: (take: String, mark: String)) {
        guard let pending = ledger.entries.first(where: { $0.operationKey == "pending:\(out.operationKey)" }), pending.delta > 0,
            !ledger.isPosted("reversed:\(out.operationKey)"), !isTakenByAStandingRefund(carryOver: carriedIn.operationKey)
        else { return }
        let reason = "refund of an upgrade's carry-over of credits out"
        add(.post(LedgerEntry(operationKey: keys.mark, bucket: carriedIn.bucket, delta: pending.delta, reason: reason), opening: nil))
        add(.post(LedgerEntry(operationKey: keys.take, bucket: carriedIn.bucket, delta: -pending.delta, reason: reason), opening: nil))
    }

    /// A window the refund found with nothing left but credits out (held, or spent and not given back) is taken all the
    /// same: two rows that net to nothing mark it, the removal's own key (`refund:<stamp>:<window>`, or `…:<n>` as
    /// ``removalKey(_:)`` gives it) and `<that key>:pending` before it. The removal's row is the window's first standing
    /// refund row, which the reads of a hold's end and a spend's reversal name (sql/0059's `refundedBy`): what comes
    /// back to the window is then the refund's to take there (``CreditHold/refundTakes(of:debits:since:account:key:)``),
    /// whatever the store, whatever period the subscription has moved to since, and the refund's reversal gives it back
    /// with the marks — as it gives back a removal had the credits come back first. Without the mark only an App Store
    /// window was named, from its subscription while that period stood refunded (sql/0060); a Stripe or Play window's
    /// returns lapsed or stayed spendable, and a window whose subscription had moved on lost them for good. The rules
    /// themselves read the window as unmarked (``LedgerSnapshot/creditsOut(of:)``): an upgrade carries its credits out
    /// as before (a claw-back of another period takes nothing of it, ``clawBack(_:of:buckets:stamp:)``).
    mutating func markTaken(ofCreditsOut window: CreditBucket, stamp: String) {
        let base = "refund:\(stamp):\(window.key)"
        let standing = ledger.entries(of: window.key).contains { entry in
            entry.delta < 0 && (entry.operationKey == base || entry.operationKey.hasPrefix(base + ":"))
                && !ledger.isPosted("reversed:\(entry.operationKey)")
        }
        let out = ledger.creditsOut(of: window)
        guard window.kind == .cycle, out > 0, !standing else { return }
        let removal = removalKey(base)
        let reason = "refund of a window's credits out"
        add(.post(LedgerEntry(operationKey: removal + LedgerSnapshot.markSuffix, bucket: window.key, delta: out, reason: reason), opening: nil))
        add(.post(LedgerEntry(operationKey: removal, bucket: window.key, delta: -out, reason: reason), opening: nil))
    }

    /// A carry that no longer stands because another period now sits between the two (``reverseStaleCarryOvers(into:)``)
    /// and has nothing to move back — one made for credits out (`pending:carry:…`, ``carryOver(into:)``) with nothing
    /// come back through it, or one whose credits were all spent — is reversed by two rows on the window that net to
    /// nothing: `reversed:<carry out>`, which the reads and the rules look for, and its offset (`reversed:pending:…`
    /// for a carry of credits out, `reversed:<carry out>:unmoved` for another). Credits still out then lapse when they
    /// come back, and the upgrade the facts do say carries them again. Until 2026-12-05 a spent carry's reversal moved
    /// nothing and posted nothing, so it stood and every later derivation reversed it again.
    mutating func endCarry(_ out: LedgerEntry) {
        let pending = ledger.entries.first { $0.operationKey == "pending:\(out.operationKey)" }
        let reason = pending == nil ? "carry-over reversed" : "refund of an upgrade's carry-over of credits out"
        let moved = -out.delta
        add(.post(LedgerEntry(operationKey: "reversed:\(out.operationKey)", bucket: out.bucket, delta: moved, reason: reason), opening: nil))
        let offset = pending.map { "reversed:\($0.operationKey)" } ?? "reversed:\(out.operationKey):unmoved"
        add(.post(LedgerEntry(operationKey: offset, bucket: out.bucket, delta: -moved, reason: reason), opening: nil))
    }

    /// The key of a refund's removal from a bucket: `base`, or — when credits reached the bucket after that removal
    /// (a grant or correction learnt later, in another delivery order) — `base:<n>`, so that what is left goes too and
    /// a refunded period never holds credits whatever order its facts arrive in. A reversal gives back all of them.
    func removalKey(_ base: String) -> String {
        guard ledger.isPosted(base) else { return base }
        return "\(base):\(ledger.entries.filter { $0.operationKey.hasPrefix(base + ":") }.count + 1)"
    }

    /// The period's cycle buckets, as written now or before billing periods were keyed.
    func cycleBuckets(of period: PaidPeriod) -> [CreditBucket] {
        let identities = Set([period.key] + period.transactionIds)
        return ledger.buckets.values
            .filter { $0.kind == .cycle && $0.billingPeriod.map(identities.contains) ?? false }
            .sorted { $0.key < $1.key }
    }

    /// `ceil(granted × percentage)` per meter, from the subscription's live windows and the account's top-ups of that
    /// meter (not the day's free credits or a grant's month: they end by themselves, and the ledger the rules read
    /// holds only the live ones of the account, so a take from them would be forgotten and taken again). What is there
    /// is taken in spend order; what is not is owed all the same and claimed (``CreditClaims``), as a top-up's refund
    /// claims: first the credits out in holds that no other claim waits for, from the last bucket back (where a hold's
    /// end gives back what it did not charge), then the rest on the first bucket (where a spend given back returns).
    /// Credits of holds and spends made before the claw-back pay the claims when they come back, so the balance ends as
    /// it would have had they come back first, never below zero, and a later derivation owes nothing more
    /// (docs/credits.md, "A claw-back that finds credits out").
    mutating func clawBack(_ milliPercent: Int32, of period: PaidPeriod, buckets: [CreditBucket], stamp: String) {
        guard let account else { return }
        var granted: [String: Int64] = [:]
        for bucket in buckets {
            granted[bucket.meter, default: 0] += ledger.entries(of: bucket.key).filter(\.isGrant).reduce(0) { $0 + $1.delta }
        }
        let prefix = SubscriptionCredits.clawBackPrefix(stamp: stamp)
        // Not a window of a period refunded in full that stays open (a refund that leaves access, as Play's): its
        // credits, there or out, are that refund's, so they pay no claw-back — taking them before the refund's removal
        // left the customer what the claw-back was owed whenever the window's credits were back before the refunds.
        let refundedInFull = Set(derivation.periods.filter { $0.revocation != nil && proration(of: $0) == nil }.flatMap(cycleBuckets(of:)).map(\.key))
        for (meter, amount) in granted.sorted(by: { $0.key < $1.key }) {
            // A take-back's row is all it owed, the claimed part included (CreditClaims).
            // Taken from a former owner's top-ups too, at this refund's date or any other of the period's: a
            // subscription that changed hands is not clawed back again from the new owner (the ledger read for it
            // holds the new owner's buckets), and what its first owner lost, which nothing here can give back, counts.
            // Not a take given back since: the refund changed kind and back (``clawBackKey(_:bucket:)``).
            let takenHere = ledger.entries.filter { entry in
                entry.operationKey.hasPrefix(prefix) && ledger.buckets[entry.bucket]?.meter == meter
                    && !ledger.isPosted("reversed:" + entry.operationKey)
            }
            let takenElsewhere = ledger.takenElsewhere
                .filter {
                    SubscriptionCredits.isClawBackTake($0.entry, of: period) && $0.meter == meter && !ledger.isReversed($0.entry.operationKey)
                }
                .map(\.entry)
            let taken = (takenHere + takenElsewhere).reduce(0) { $0 - $1.delta }
            var due = Proration.clawback(granted: amount, milliPercent: milliPercent) - taken
            let targets: [(bucket: CreditBucket, key: String)] = ledger.liveBuckets(account: account, cycleOf: [subscription], meter: meter, at: now)
                .filter { ($0.kind == .cycle || $0.kind == .topUp) && !refundedInFull.contains($0.key) }
                .compactMap { bucket in clawBackKey(prefix + bucket.key, bucket: bucket.key).map { (bucket, $0) } }
            guard due > 0, !targets.isEmpty else { continue }
            let available = targets.map { max(ledger.balance(of: $0.bucket.key), 0) }
            var owed = [Int64](repeating: 0, count: targets.count)
            for index in targets.indices {
                owed[index] = min(due, available[index])
                due -= owed[index]
            }
            // Held credits another claim on the bucket waits for (a pack's refund, an earlier claw-back) pay that one
            // first: only the rest can pay this one. Claims older than the hold count too, which can only leave the
            // customer more.
            for index in targets.indices.reversed() where due > 0 {
                let bucket = targets[index].bucket
                let held = min(due, max(ledger.heldOut(of: bucket) - CreditClaims.outstanding(on: bucket.key, in: ledger), 0))
                owed[index] += held
                due -= held
            }
            owed[0] += due
            for (index, target) in targets.enumerated() {
                for operation in CreditClaims.takeBack(
                    target.key, bucket: target.bucket.key, owed: owed[index], available: available[index], reason: "prorated refund")
                {
                    add(operation)
                }
            }
        }
    }

    /// The key of a claw-back's take from `bucket`: `base` (`clawback:<stamp>:<bucket>`), or `base:<n>` when every take
    /// under it was given back — the refund changed kind and back since (prorated, then full while its period was
    /// again the one in force, then prorated: the full refund's derivation gave the take back), so it takes again; nil
    /// while one stands. Until 2026-12-05 the first take's key stood for good, and the second claw-back took nothing.
    func clawBackKey(_ base: String, bucket: String) -> String? {
        let takes = ledger.entries(of: bucket).filter { SubscriptionCredits.isTake($0.operationKey, under: base) }
        return againCounter(after: takes).map { $0 == 0 ? base : "\(base):\($0)" }
    }

    /// The counter of a take made again (``clawBackKey(_:bucket:)``, ``carryTakeKeys(stamp:carriedIn:)``): how many
    /// were made before it, every one given back since; 0 for the first, nil while one stands.
    func againCounter(after takes: [LedgerEntry]) -> Int? {
        takes.allSatisfy { ledger.isPosted("reversed:" + $0.operationKey) } ? takes.count : nil
    }

    /// The percentage of `period`'s refund when it claws back (an earlier period's, or one that keeps access), nil for
    /// a removal of all that is left. Whether a refund is prorated depends on whether its period is still in force,
    /// which a later fact can change: the removal of the other kind then no longer stands and is given back.
    func proration(of period: PaidPeriod) -> Int32? {
        period.revocation.flatMap { revocation in
            revocation.prorated.flatMap { period.key == derivation.state.billingPeriodKey && !revocation.keepsAccess ? nil : $0 }
        }
    }

    /// Gives back every removal of the period's credits that no longer stands (``reverseRemovals(of:except:)``). Run for
    /// every period before any refund takes (``settleRefunds(of:)``): a carry-over both of whose ends were refunded is
    /// the standing refund's to take once the other is reversed, whichever of the two periods comes first.
    mutating func reverseRefundsNoLongerStanding(of period: PaidPeriod) {
        let stamp = SubscriptionCredits.refundStamp(of: period)
        let prorated = proration(of: period)
        reverseRemovals(of: period, except: stamp.map { prorated == nil ? "refund:\($0):" : SubscriptionCredits.clawBackPrefix(stamp: $0) })
    }

    /// Gives back every removal of the period's credits that no longer stands: all of them once the refund is
    /// reversed, the older ones when the period was refunded again at another date or its refund changed kind. Removals written before billing
    /// periods were keyed (`refund:<transactionId>:…`) count too.
    mutating func reverseRemovals(of period: PaidPeriod, except standing: String?) {
        let identities = [period.key] + period.transactionIds
        let prefixes = identities.flatMap { ["refund:\($0):", "clawback:\($0):"] }
        let removals = ledger.entries.filter { entry in
            prefixes.contains { entry.operationKey.hasPrefix($0) } && !(standing.map { entry.operationKey.hasPrefix($0) } ?? false)
        }
        // A take-back (a carry-over's, a claw-back's) may have a claim, and payments of it: every row is undone
        // (CreditClaims).
        var rows = removals.flatMap { CreditClaims.rows(of: $0.operationKey, in: ledger) }
        // What the period's claw-backs took from a former owner's top-ups (noted from outside the snapshot) goes back
        // too once no claw-back of the period stands: reversed, or now a removal of all that is left, as the take
        // would were the subscription still that owner's. While one stands at another date it counts as taken
        // (``clawBack(_:of:buckets:stamp:)``): the new owner is not clawed back for it.
        // A take reversed already is still read: a payment of its claim written since (a hold of that owner's ending
        // under its own lock while this reversal was applied) goes back at the next derivation, as on the owner's own.
        if !(standing?.hasPrefix("clawback:") ?? false) {
            let elsewhere = ledger.takenElsewhere.map(\.entry)
            for take in elsewhere where SubscriptionCredits.isClawBackTake(take, of: period) {
                rows += CreditClaims.rows(of: take.operationKey, in: elsewhere).filter { !ledger.isReversed($0.operationKey) }
            }
        }
        for row in rows {
            add(
                .post(
                    LedgerEntry(operationKey: "reversed:\(row.operationKey)", bucket: row.bucket, delta: -row.delta, reason: "refund reversed"),
                    opening: nil))
        }
    }
}
