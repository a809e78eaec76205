import Foundation
import Subscriptions

/// The credit rules of a subscription: a pure function from its derived facts, the catalogue, the ledger rows already
/// posted and the clock to the ledger operations still due. Persistence only posts them.
///
/// Every grant is keyed by (billing period, credit window, meter), so a restored copy of a period, a duplicate or a
/// replay never grants twice; when the facts change what a window is owed (an upgrade learnt late, a refund of an
/// earlier period), the difference is posted as a correction with its own key — rows are never rewritten.
public enum SubscriptionCredits {
    /// The operations due for `derivation` at `now`.
    public static func operationsDue(
        _ derivation: Lifecycle.Derivation, catalogue: TierCatalogue, ledger: LedgerSnapshot, now: Date
    ) -> [LedgerOperation] {
        var plan = Plan(derivation: derivation, catalogue: catalogue, ledger: ledger, now: now)
        // First, so that the upgrade the facts do say can carry those credits in this same pass.
        for period in derivation.periods { plan.reverseStaleCarryOvers(into: period) }
        for period in derivation.periods { plan.reverseRefundsNoLongerStanding(of: period) }
        for period in derivation.periods {
            plan.grantWindows(of: period)
            plan.carryOver(into: period)
            plan.settleRefunds(of: period)
        }
        return plan.operations
    }

    /// The stamp of `period`'s refund or revocation, `<period>:<its date in ms>`: every removal of the period's credits
    /// is keyed by it, so a reversal gives back exactly those, and a refund at another date removes again.
    static func refundStamp(of period: PaidPeriod) -> String? {
        period.revocation.map { "\(period.key):\(Plan.milliseconds($0.date.timeIntervalSince1970))" }
    }

    /// What a claw-back of a refund stamped `stamp` keys its take-backs with, before the bucket's key (its period's
    /// ``clawBackPeriodPrefix(of:)``, then the refund's date).
    static func clawBackPrefix(stamp: String) -> String { "clawback:\(stamp):" }

    /// What the take-backs of claw-backs of `derivation`'s periods begin with, whatever the refund's date
    /// (`clawback:<period>:`): one per period with a prorated refund, now or once (reversed or refunded in full since,
    /// when its takes go back), none without. A subscription that changed hands looks up with them what its claw-backs
    /// took from former owners' top-ups (`CreditLedger.noteTakenElsewhere`).
    public static func clawBackPrefixes(of derivation: Lifecycle.Derivation) -> [String] {
        derivation.periods.filter { $0.revocation?.prorated != nil || $0.hadProratedRefund }.map(clawBackPeriodPrefix(of:))
    }

    /// What the take-backs of `period`'s claw-backs begin with, whatever the refund's date.
    static func clawBackPeriodPrefix(of period: PaidPeriod) -> String { "clawback:\(period.key):" }

    /// Whether `entry` is a take-back of a claw-back of `period` from its own bucket, at any refund date: its key is
    /// exactly `clawback:<period>:<date in ms>:<its bucket>`, or that and `:<n>` (a take again after the refund changed
    /// kind and back, ``Plan/clawBackKey(_:bucket:)``) — not a period whose key merely begins with this one's.
    static func isClawBackTake(_ entry: LedgerEntry, of period: PaidPeriod) -> Bool {
        let prefix = clawBackPeriodPrefix(of: period)
        guard entry.operationKey.hasPrefix(prefix) else { return false }
        let rest = entry.operationKey.dropFirst(prefix.count)
        guard let colon = rest.firstIndex(of: ":") else { return false }
        let date = rest[..<colon]
        return isNumber(date) && isTake(entry.operationKey, under: prefix + date + ":" + entry.bucket)
    }

    /// Whether `key` is `base` or `base:<n>`: a removal or take keyed `base` (``Plan/removalKey(_:)``,
    /// ``Plan/clawBackKey(_:bucket:)``), or one posted again under it.
    static func isTake(_ key: String, under base: String) -> Bool {
        key == base || (key.hasPrefix(base + ":") && isNumber(key.dropFirst(base.count + 1)))
    }

    /// Whether `key` is a refund's take of the carry-over `carryIn` under `stamp`: `refund:<stamp>:<carry in>`, or
    /// `refund:<stamp>:<n>:<carry in>` (taken again, ``Plan/carryTakeKeys(stamp:carriedIn:)``) — not its mark
    /// (`…:pending:<carry in>`).
    static func isCarryTake(_ key: String, stamp: String, carryIn: String) -> Bool {
        let prefix = "refund:\(stamp):"
        guard key.count >= prefix.count + carryIn.count, key.hasPrefix(prefix), key.hasSuffix(carryIn) else { return false }
        let middle = key.dropFirst(prefix.count).dropLast(carryIn.count)
        return middle.isEmpty || (middle.hasSuffix(":") && isNumber(middle.dropLast()))
    }

    private static func isNumber(_ text: Substring) -> Bool { !text.isEmpty && text.allSatisfy { ("0"..."9").contains($0) } }

    /// When the next credit window of the period in force opens after `now` (the credit window reset), if it does.
    public static func nextWindowStart(_ derivation: Lifecycle.Derivation, catalogue: TierCatalogue, now: Date) -> Date? {
        guard derivation.state.status.isRunning,
            let period = derivation.periods.last(where: { $0.key == derivation.state.billingPeriodKey })
        else { return nil }
        return catalogue.windows(of: period).map(\.start).first { $0 > now }
    }

    /// The operations decided so far and the ledger as they leave it.
    struct Plan {
        let derivation: Lifecycle.Derivation
        let catalogue: TierCatalogue
        let now: Date
        var ledger: LedgerSnapshot
        var operations: [LedgerOperation] = []

        init(derivation: Lifecycle.Derivation, catalogue: TierCatalogue, ledger: LedgerSnapshot, now: Date) {
            self.derivation = derivation
            self.catalogue = catalogue
            self.ledger = ledger
            self.now = now
        }

        var account: AccountID? { derivation.state.accountId }
        var subscription: String { derivation.state.originalTransactionId }

        mutating func add(_ operation: LedgerOperation) {
            if case .post(let entry, _) = operation, entry.delta == 0 || ledger.isPosted(entry.operationKey) { return }
            operations.append(operation)
            ledger.apply(operation)
        }

        /// The period's windows as the credits see them: the one in force reaches the end of a grace period, and every
        /// window of every period closes when the subscription's access ends — whichever period the ending fact named
        /// (a report about another transaction, a refund of a renewal reported early): an account without access holds
        /// no cycle credits.
        func windows(of period: PaidPeriod) -> [CreditWindow] {
            let state = derivation.state
            let inGrace = state.status == .gracePeriod && period.key == state.billingPeriodKey
            let graceEnd = state.gracePeriodExpiresAt ?? period.end.addingTimeInterval(SubscriptionState.shortestGracePeriod)
            return catalogue.windows(of: period, accessEnd: inGrace ? graceEnd : nil, accessEndsAt: derivation.accessEndsAt)
        }

        /// The buckets of a period's window and meter — the one written now first, then any written before billing
        /// periods were keyed (one per copy of the period, when a restore was granted again).
        func buckets(of period: PaidPeriod, window: Int, meter: String) -> [CreditBucket] {
            let identities = Set([period.key] + period.transactionIds)
            let current = "cycle:\(period.key):w\(window):\(meter)"
            return ledger.buckets.values
                .filter {
                    $0.key == current
                        || ($0.kind == .cycle && $0.meter == meter && $0.windowIndex == window
                            && $0.billingPeriod.map(identities.contains) ?? false)
                }
                .sorted { ($0.key == current ? 0 : 1, $0.key) < ($1.key == current ? 0 : 1, $1.key) }
        }

        /// Every window (the first at once, the others once started) is owed its allowance — capped in a free offer
        /// period, prorated in the first window of an upgrade — unless the period was refunded before the window began;
        /// each window ends where the facts say.
        mutating func grantWindows(of period: PaidPeriod) {
            guard let (tier, product) = catalogue.tier(ofProduct: period.productId) else { return }
            let windows = windows(of: period)
            for window in windows {
                for (meter, allowance) in tier.allowances.sorted(by: { $0.key < $1.key }) {
                    guard let full = allowance.cycleGrant(isTrial: period.isFreeOffer) else { continue }
                    let owed: Int64
                    // The first window is the purchase itself, owed as soon as it is known (its bucket opens only at
                    // its start, so a renewal reported early does not reset early); later windows when they start.
                    if (window.index > 0 && window.start > now) || period.revocation.map({ $0.date <= window.start }) == true {
                        owed = 0
                    } else if window.index == 0, catalogue.upgradeCredits == .prorate, let replaced = period.upgradedFrom {
                        owed = upgradeGrant(full, into: period, product: product, replacing: replaced)
                    } else if window.index == 0, let replaced = period.downgradedFrom {
                        owed = downgradeGrant(full, into: period, meter: meter, replacing: replaced)
                    } else {
                        owed = full
                    }
                    let existing = buckets(of: period, window: window.index, meter: meter)
                    settle(owed, window: window, meter: meter, of: period, in: existing.first)
                    // A second bucket for the same window (a restored copy granted again before 0007) is owed nothing.
                    for duplicate in existing.dropFirst() { settle(0, window: window, meter: meter, of: period, in: duplicate) }
                }
            }
            // A window granted before a later fact took it away (the period was replaced or access ended before it
            // began) is owed nothing and closes where it opens: no bucket holds credits that no period's window covers.
            let kept = Set(windows.map(\.index))
            for bucket in cycleBuckets(of: period) {
                guard let index = bucket.windowIndex, !kept.contains(index) else { continue }
                let gone = CreditWindow(index: index, interval: DateInterval(start: bucket.validFrom, duration: 0))
                settle(0, window: gone, meter: bucket.meter, of: period, in: bucket)
            }
        }

        /// Posts what a window is still owed (or a correction of what it was over-granted, never below zero) and
        /// moves its end where the facts put it.
        mutating func settle(_ owed: Int64, window: CreditWindow, meter: String, of period: PaidPeriod, in existing: CreditBucket?) {
            guard let existing else {
                guard owed > 0 else { return }
                let bucket = CreditBucket(
                    key: "cycle:\(period.key):w\(window.index):\(meter)", meter: meter, kind: .cycle,
                    originalTransactionId: subscription, billingPeriod: period.key, validFrom: window.start,
                    validUntil: window.end, price: period.price ?? catalogue.tier(ofProduct: period.productId)?.product.price)
                let reason =
                    window.index == 0 && period.upgradedFrom != nil
                    ? (catalogue.upgradeCredits == .prorate ? "prorated upgrade grant" : "upgrade grant")
                    : window.index == 0 && period.downgradedFrom != nil
                        ? "downgrade grant"
                        : period.isFreeOffer ? "free offer grant" : "window grant"
                let entry = LedgerEntry(
                    operationKey: "grant:\(period.key):w\(window.index):\(meter)", bucket: bucket.key, delta: owed, reason: reason)
                add(.post(entry, opening: bucket))
                return
            }
            // Compared in milliseconds: a date read back from PostgreSQL (microseconds) is not bit-equal to one computed.
            if existing.validUntil.map({ Self.milliseconds($0.timeIntervalSince1970) }) != Self.milliseconds(window.end.timeIntervalSince1970) {
                add(.setWindowEnd(bucket: existing.key, end: window.end))
            }
            let granted = ledger.entries(of: existing.key).filter(\.isGrant).reduce(0) { $0 + $1.delta }
            var difference = owed - granted
            if difference < 0 { difference = -min(-difference, max(ledger.balance(of: existing.key), 0)) }
            add(
                .post(
                    LedgerEntry(
                        operationKey: "correction:\(existing.key):\(owed)", bucket: existing.key, delta: difference, reason: "grant corrected"),
                    opening: nil))
        }

        /// The first window of a plan change that is not an upgrade, made at once (Play's downgrades and crossgrades):
        /// what the replaced window had left at the switch, up to the new allowance, moves into it — no fresh
        /// allowance, so changing plans back and forth mints nothing. Periods are settled oldest first, so a replaced
        /// period granted in this same pass is seen; the move is posted once and counted as moved ever after.
        mutating func downgradeGrant(_ allowance: Int64, into period: PaidPeriod, meter: String, replacing key: String) -> Int64 {
            let identities = Set([key] + (derivation.periods.first { $0.key == key }?.transactionIds ?? []))
            guard
                let old = ledger.buckets.values
                    .filter({ $0.kind == .cycle && $0.meter == meter && $0.billingPeriod.map(identities.contains) == true })
                    .filter({ $0.validFrom <= period.start && ($0.validUntil ?? .distantFuture) >= period.start })
                    .sorted(by: { $0.key < $1.key }).first
            else { return 0 }
            let movedKey = "carry:\(period.key):\(old.key):down"
            let moved = -(ledger.entries.first { $0.operationKey == movedKey }?.delta ?? 0)
            let owed = min(allowance, max(ledger.balance(of: old.key), 0) + moved)
            if moved == 0, owed > 0 {
                add(.post(LedgerEntry(operationKey: movedKey, bucket: old.key, delta: -owed, reason: "downgrade carry-over"), opening: nil))
            }
            return owed
        }

        /// The first window of an upgrade: the allowance times the share of the new window's price the customer
        /// effectively pays after Apple's pro-rata refund of the old window's unused part — each side's price share
        /// of one credit window (a monthly price; a twelfth of an annual one).
        func upgradeGrant(_ allowance: Int64, into period: PaidPeriod, product: TierCatalogue.Product, replacing key: String) -> Int64 {
            guard let old = derivation.periods.first(where: { $0.key == key }),
                let oldProduct = catalogue.tier(ofProduct: old.productId)?.product,
                let oldWindow = catalogue.windows(
                    productId: old.productId, offer: old.offer, start: old.start, end: old.end, billedMonthly: old.billedMonthly
                )
                .first(where: { $0.start <= period.start && period.start < $0.end })
            else { return allowance }
            let newCount = Int64(catalogue.windowCount(productId: period.productId, offer: period.offer, billedMonthly: period.billedMonthly))
            let oldCount = Int64(catalogue.windowCount(productId: old.productId, offer: old.offer, billedMonthly: old.billedMonthly))
            return Proration.upgradeGrant(
                allowance: allowance,
                newPrice: (period.price ?? product.price) * oldCount, oldPrice: (old.price ?? oldProduct.price) * newCount,
                remaining: Self.milliseconds(oldWindow.end.timeIntervalSince(period.start)),
                cycle: Self.milliseconds(oldWindow.end.timeIntervalSince(oldWindow.start)))
        }

        /// A carry-over stands while its period is the upgrade of the period whose window it came from. When a later
        /// fact says otherwise (another period now sits between them, as a second copy of the upgrade a few
        /// milliseconds away does), it is undone as if it had never been posted — what a refund took of it is given
        /// back, then what is left of it in top-ups (never below zero) goes back to that window, closed at the switch
        /// so it no longer counts — and the upgrade the facts do say carries it again: any delivery order ends alike.
        mutating func reverseStaleCarryOvers(into period: PaidPeriod) {
            let replaced = period.upgradedFrom.flatMap { key in derivation.periods.first { $0.key == key } }
            let identities = Set(replaced.map { [$0.key] + $0.transactionIds } ?? [])
            let carriedOut = ledger.entries.filter { $0.operationKey.hasPrefix("carry:\(period.key):") && $0.operationKey.hasSuffix(":out") }
            for out in carriedOut {
                let inKey = String(out.operationKey.dropLast("out".count)) + "in"
                guard !(ledger.buckets[out.bucket]?.billingPeriod.map(identities.contains) ?? false),
                    !ledger.isPosted("reversed:\(inKey)"), !ledger.isPosted("reversed:\(out.operationKey)"),
                    let carried = ledger.entries.first(where: { $0.operationKey == inKey })
                else { continue }
                // Each refund's take of it, its claim and payments, and what it took of credits that came back through it.
                let refunds = ledger.entries.filter { $0.operationKey.hasPrefix("refund:") && $0.operationKey.hasSuffix(":\(inKey)") }
                let takenBack = refunds.flatMap { take in ledger.entries.filter { $0.operationKey.hasPrefix("\(take.operationKey):back:") } }
                for taken in refunds.flatMap({ CreditClaims.rows(of: $0.operationKey, in: ledger) }) + takenBack {
                    add(
                        .post(
                            LedgerEntry(
                                operationKey: "reversed:\(taken.operationKey)", bucket: taken.bucket, delta: -taken.delta,
                                reason: "carry-over reversed"), opening: nil))
                }
                // What is there, not a claim on what is out: the carry-over is moved, not taken — the upgrade the facts
                // do say carries the window's credits again, and credits held now come back to the top-ups, where the
                // customer keeps them. (A claim's payment would take them instead.)
                let back = min(standing(carryOver: inKey), max(ledger.balance(of: carried.bucket), 0))
                // Nothing to move back (a carry made for credits out with nothing come back through it, or one whose
                // credits were all spent): rows of nothing would not be posted, and the carry would stand — for the
                // reads of holds' ends, for a later refund to take again, and for every later derivation to reverse
                // again, moving a pack bought since into the closed window. Two rows that net to nothing end it.
                if back <= 0 { endCarry(out) }
                add(
                    .post(
                        LedgerEntry(operationKey: "reversed:\(inKey)", bucket: carried.bucket, delta: -back, reason: "carry-over reversed"),
                        opening: nil))
                add(
                    .post(
                        LedgerEntry(operationKey: "reversed:\(out.operationKey)", bucket: out.bucket, delta: back, reason: "carry-over reversed"),
                        opening: nil))
            }
        }

        /// What is still in top-ups of a carry-over (`carry:…:in`): less what went back or was taken by a refund, plus
        /// what a refund reversal gave back — every such row is keyed `…:<carry key>` — plus the credits out of the
        /// window at the switch that came back through it since (``returned(through:)``), which it would have moved had
        /// they come back first. A refund's claim is not credits (``CreditClaims``): the refund took the carry-over
        /// whole, the claim owes what was not there.
        ///
        /// While a refund's take of it stands, nothing of it does: that refund took it whole, claiming what was not
        /// there, and what comes back through it while the take stands is the refund's — it pays the claim
        /// (`claim:<take>:paid:…`) and the take has the rest (`<take>:back:…`,
        /// ``CreditHold/refundTakes(of:debits:since:account:key:)``). Counting those returns as standing, a second refund
        /// of the carry (its other end: Pro's month and the upgrade both refunded) took them again, as a claim. Once the
        /// take is reversed, every row of it is too, and what is left is the carry and what came back through it.
        func standing(carryOver inKey: String) -> Int64 {
            guard !isTakenByAStandingRefund(carryOver: inKey) else { return 0 }
            return ledger.entries.filter { entry in
                (entry.operationKey == inKey || entry.operationKey.hasSuffix(":\(inKey)")) && !CreditClaims.isClaim(entry.operationKey)
                    && !entry.operationKey.hasPrefix("reversed:claim:")
            }.reduce(0) { $0 + $1.delta } + returned(through: inKey)
        }

        /// Whether a refund's take of the carry-over `inKey` (`refund:<stamp>:<carry in>`, or the mark of a take of
        /// a carry made for credits out, `refund:<stamp>:pending:<carry in>`) stands: not reversed.
        func isTakenByAStandingRefund(carryOver inKey: String) -> Bool {
            ledger.entries.contains { entry in
                entry.operationKey.hasPrefix("refund:") && entry.operationKey.hasSuffix(":\(inKey)")
                    && !ledger.isPosted("reversed:\(entry.operationKey)")
            }
        }

        /// What came back to a carry-over's top-up from its window since the carry, as the reads of a hold's end and a
        /// spend's reversal send it (sql/0057: to the top-up of the last carry made from the debit's bucket after the
        /// debit): each return row on the top-up (`hold-return:<id>:<n>`, `<spend debit>:reversed`) whose debit is on
        /// the window before the carry. Before payments of claims. Only for a window carried once: the snapshot lists
        /// rows bucket by bucket, so which of two carries a return came through is not known, and none is counted (the
        /// customer keeps them, as before 2026-12-02).
        func returned(through inKey: String) -> Int64 {
            let outKey = String(inKey.dropLast("in".count)) + "out"
            guard let out = ledger.entries.first(where: { $0.operationKey == outKey }),
                let topUp = ledger.entries.first(where: { $0.operationKey == inKey })?.bucket
            else { return 0 }
            // The window's rows in posting order (one bucket's rows are).
            let window = ledger.entries(of: out.bucket)
            guard window.filter({ $0.operationKey.hasPrefix("carry:") && $0.operationKey.hasSuffix(":out") }).count == 1,
                let carried = window.firstIndex(where: { $0.operationKey == outKey })
            else { return 0 }
            let debits = Set(
                window[..<carried].filter { $0.delta < 0 && ($0.operationKey.hasPrefix("hold:") || $0.operationKey.hasPrefix("spend:")) }
                    .map(\.operationKey))
            return ledger.entries(of: topUp).reduce(0) { returned, entry in
                guard entry.delta > 0 else { return returned }
                let debit =
                    entry.operationKey.hasPrefix("hold-return:")
                    ? "hold:" + entry.operationKey.dropFirst("hold-return:".count)
                    : entry.operationKey.hasSuffix(":reversed") ? String(entry.operationKey.dropLast(":reversed".count)) : nil
                return debit.map(debits.contains) == true ? returned + entry.delta : returned
            }
        }

        /// After an upgrade under `prorate`, what is left in the replaced period's window at the switch moves to
        /// top-ups; under `fresh` it ends with the window. Credits out at the switch (held, or spent and not given back)
        /// follow when they come back: the hold's end and the spend's reversal find the carry after their debit and go
        /// to its top-up (sql/0057's reads). When nothing is left to move, the carry is still made, for the credits out,
        /// with rows that move nothing (`pending:carry:…`, their opposites): without a carry to follow, those credits
        /// lapsed with the window where, back before the upgrade, they would have been carried (docs/credits.md).
        mutating func carryOver(into period: PaidPeriod) {
            guard catalogue.upgradeCredits == .prorate, let key = period.upgradedFrom, let account,
                let old = derivation.periods.first(where: { $0.key == key })
            else { return }
            let buckets = ledger.buckets.values
                .filter { $0.kind == .cycle && $0.billingPeriod.map(Set([old.key] + old.transactionIds).contains) ?? false }
                .filter { $0.validFrom <= period.start && ($0.validUntil ?? .distantFuture) >= period.start }
                .sorted { $0.key < $1.key }
            for bucket in buckets {
                let outKey = "carry:\(period.key):\(bucket.key):out"
                let inKey = "carry:\(period.key):\(bucket.key):in"
                guard !ledger.isPosted(outKey) else { continue }
                let left = ledger.balance(of: bucket.key)
                let topUp = CreditBucket.topUp(account: account, meter: bucket.meter)
                if left > 0 {
                    add(.post(LedgerEntry(operationKey: outKey, bucket: bucket.key, delta: -left, reason: "upgrade carry-over"), opening: nil))
                    add(.post(LedgerEntry(operationKey: inKey, bucket: topUp.key, delta: left, reason: "upgrade carry-over"), opening: topUp))
                    continue
                }
                // Only in the pass that closes the window at the switch: a later derivation (a renewal, `replay`) of
                // an upgrade made before this rule, or whose credits out have all ended since, adds nothing.
                let closingNow = operations.contains { operation in
                    if case .setWindowEnd(bucket.key, _) = operation { return true }
                    return false
                }
                // Not while a claim on the window waits for them (a claw-back's): coming back there, they pay it first,
                // which a carry would skip (docs/credits.md).
                let out = closingNow && left == 0 && CreditClaims.outstanding(on: bucket.key, in: ledger) == 0 ? ledger.creditsOut(of: bucket) : 0
                guard out > 0 else { continue }
                // Each side's pair nets to nothing; the carry's own rows are what the reads follow. The `pending:` row
                // on the top-up ends in the carry's key, so what stands of the carry-over (a refund of the upgrade
                // takes it) counts nothing moved.
                let reason = "upgrade carry-over of credits out"
                add(.post(LedgerEntry(operationKey: "pending:\(outKey)", bucket: bucket.key, delta: out, reason: reason), opening: nil))
                add(.post(LedgerEntry(operationKey: outKey, bucket: bucket.key, delta: -out, reason: reason), opening: nil))
                add(.post(LedgerEntry(operationKey: inKey, bucket: topUp.key, delta: out, reason: reason), opening: topUp))
                add(.post(LedgerEntry(operationKey: "pending:\(inKey)", bucket: topUp.key, delta: -out, reason: reason), opening: nil))
            }
        }

        static func milliseconds(_ interval: TimeInterval) -> Int64 { Int64((interval * 1000).rounded()) }
    }
}
