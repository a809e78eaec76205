import Entitlements
import Foundation
import Subscriptions

/// The credit rules of a grant or a one-time purchase: its tier's per-cycle allowance, granted monthly from its start
/// on the start's day (clamped: Jan 31 → Feb 28/29 → Mar 31, as annual plans), each window ending where the source
/// does. A window is granted when it is in force — reads count it before any write — and when the source ends early
/// its windows close there (what was left in them ends with them); a reversal opens them again.
public enum SourceCredits {
    /// The credit window of `record` containing `now`, while it entitles.
    public static func window(of record: EntitlementRecord, catalogue: TierCatalogue, at now: Date) -> CreditWindow? {
        guard catalogue.source(of: record, at: now).entitled else { return nil }
        return window(index(of: record, at: now), of: record, catalogue: catalogue)
    }

    /// The window a change of `record` owes: the one in force, or — once it ended after it began — the last one it
    /// entitled in, closed at its end. So a purchase learnt only with its refund opens the same window the purchase
    /// would have, and the ledger ends alike in any delivery order.
    static func owedWindow(of record: EntitlementRecord, catalogue: TierCatalogue, at now: Date) -> CreditWindow? {
        if let window = window(of: record, catalogue: catalogue, at: now) { return window }
        let source = catalogue.source(of: record, at: now)
        guard source.tier != nil, source.status != .scheduled,
            let end = [catalogue.clockEnd(of: record), record.endedAt].compactMap({ $0 }).min(), end > record.startsAt, end <= now
        else { return nil }
        return window(index(of: record, at: end.addingTimeInterval(-0.001)), of: record, catalogue: catalogue)
    }

    /// Which monthly window of `record` holds `instant` (0 before its start).
    static func index(of record: EntitlementRecord, at instant: Date) -> Int {
        var index = max(0, CreditCalendar.utc.dateComponents([.month], from: record.startsAt, to: instant).month ?? 0)
        while CreditCalendar.monthlyBoundary(anchor: record.startsAt, month: index + 1) <= instant { index += 1 }
        while index > 0, CreditCalendar.monthlyBoundary(anchor: record.startsAt, month: index) > instant { index -= 1 }
        return index
    }

    /// Window `index` of `record` as its facts leave it: ending at the next monthly boundary, the source's end by the
    /// clock or its early end, whichever comes first (empty when the source ended before it began).
    static func window(_ index: Int, of record: EntitlementRecord, catalogue: TierCatalogue) -> CreditWindow {
        let start = CreditCalendar.monthlyBoundary(anchor: record.startsAt, month: index)
        let end = [CreditCalendar.monthlyBoundary(anchor: record.startsAt, month: index + 1), catalogue.clockEnd(of: record), record.endedAt]
            .compactMap { $0 }.min()!
        return CreditWindow(index: index, interval: DateInterval(start: start, end: max(start, end)))
    }

    /// The key of a window's bucket.
    public static func bucketKey(of record: EntitlementRecord, window: Int, meter: String) -> String {
        "source:\(record.id):w\(window):\(meter)"
    }

    /// The grants of the window in force that `live` (the account's live buckets) does not hold yet: what reads count
    /// and spends write.
    public static func grantsDue(
        _ record: EntitlementRecord, account: AccountID, catalogue: TierCatalogue, live: [AccountCredits.LiveBalance], now: Date
    ) -> [LedgerOperation] {
        guard let window = window(of: record, catalogue: catalogue, at: now) else { return [] }
        return grants(of: window, record: record, account: account, catalogue: catalogue).filter { operation in
            guard case .post(_, let bucket?) = operation else { return false }
            return !live.contains { $0.bucket.key == bucket.key }
        }
    }

    /// What a change of `record` owes, given `ledger` — every bucket the record ever opened, with their entries: each
    /// bucket's window moved to where the facts now end it, and the owed window granted (``owedWindow(of:catalogue:at:)``).
    public static func operationsDue(
        _ record: EntitlementRecord, account: AccountID, catalogue: TierCatalogue, ledger: LedgerSnapshot, now: Date
    ) -> [LedgerOperation] {
        var operations: [LedgerOperation] = []
        for bucket in ledger.buckets.values.sorted(by: { $0.key < $1.key }) where bucket.billingPeriod == record.id && bucket.kind == .entitlement {
            guard let index = bucket.windowIndex else { continue }
            let end = window(index, of: record, catalogue: catalogue).end
            if bucket.validUntil.map(milliseconds) != milliseconds(end) { operations.append(.setWindowEnd(bucket: bucket.key, end: end)) }
        }
        if let window = owedWindow(of: record, catalogue: catalogue, at: now) {
            operations += grants(of: window, record: record, account: account, catalogue: catalogue).filter { operation in
                guard case .post(let entry, _) = operation else { return true }
                return !ledger.isPosted(entry.operationKey)
            }
        }
        return operations
    }

    /// The grant of each per-cycle allowance of the record's tier for `window`.
    static func grants(of window: CreditWindow, record: EntitlementRecord, account: AccountID, catalogue: TierCatalogue) -> [LedgerOperation] {
        guard let tier = catalogue.terms(of: record).1 else { return [] }
        return tier.allowances.sorted(by: { $0.key < $1.key }).compactMap { meter, allowance in
            guard let amount = allowance.perCycle, amount > 0 else { return nil }
            let key = bucketKey(of: record, window: window.index, meter: meter)
            let bucket = CreditBucket(
                key: key, meter: meter, kind: .entitlement, billingPeriod: record.id, accountId: account, validFrom: window.start,
                validUntil: window.end)
            let reason = record.kind == .grant ? "grant window" : "purchase window"
            return .post(LedgerEntry(operationKey: "grant:\(key)", bucket: key, delta: amount, reason: reason), opening: bucket)
        }
    }

    static func milliseconds(_ date: Date) -> Int64 { Int64((date.timeIntervalSince1970 * 1000).rounded()) }
}
