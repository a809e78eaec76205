import Foundation
import Subscriptions

/// The ledger rows the rules need — a subscription's buckets, the owning account's buckets, and their entries — as a
/// value the rules can extend with what they decide, so each later decision sees the earlier ones.
public struct LedgerSnapshot: Sendable, Equatable {
    public private(set) var buckets: [String: CreditBucket] = [:]
    public private(set) var entries: [LedgerEntry] = []
    /// Take-backs of the subscription's refunds posted to buckets the snapshot does not hold, with their claims' rows: a
    /// previous owner's top-ups, which the ledger of a subscription that changed hands no longer reads
    /// (``noteTakenElsewhere(_:)``).
    public private(set) var takenElsewhere: [TakenElsewhere] = []
    private var postedKeys = Set<String>()
    private var balances: [String: Int64] = [:]

    /// A take-back row (or a row of its claim) on a bucket outside the snapshot, with that bucket's meter.
    public struct TakenElsewhere: Sendable, Equatable {
        public var entry: LedgerEntry
        public var meter: String
        /// The row was given back (`reversed:<its key>` is posted there): it counts for nothing, and is not given back
        /// again.
        public var reversed: Bool

        public init(entry: LedgerEntry, meter: String, reversed: Bool = false) {
            self.entry = entry
            self.meter = meter
            self.reversed = reversed
        }
    }

    /// Whether `operationKey` was given back: a `reversed:` row posted here, or a row taken elsewhere marked so.
    public func isReversed(_ operationKey: String) -> Bool {
        isPosted("reversed:" + operationKey) || takenElsewhere.contains { $0.entry.operationKey == operationKey && $0.reversed }
    }

    public init(buckets: [CreditBucket] = [], entries: [LedgerEntry] = []) {
        for bucket in buckets { self.buckets[bucket.key] = bucket }
        for entry in entries { record(entry) }
    }

    public func isPosted(_ operationKey: String) -> Bool { postedKeys.contains(operationKey) }

    /// Adds take-backs found on buckets outside the snapshot (a claw-back's from the top-ups of an account that owned
    /// the subscription before): they count as taken, and are not part of any balance here.
    public mutating func noteTakenElsewhere(_ rows: [TakenElsewhere]) {
        takenElsewhere += rows.filter { row in !takenElsewhere.contains { $0.entry.operationKey == row.entry.operationKey } }
    }

    public func balance(of bucket: String) -> Int64 { balances[bucket] ?? 0 }

    public func entries(of bucket: String) -> [LedgerEntry] { entries.filter { $0.bucket == bucket } }

    /// Applies an operation as persistence would: an entry already posted, or a zero delta, changes nothing.
    public mutating func apply(_ operation: LedgerOperation) {
        switch operation {
        case .post(let entry, let bucket):
            if let bucket, buckets[bucket.key] == nil { buckets[bucket.key] = bucket }
            if entry.delta != 0, !postedKeys.contains(entry.operationKey) { record(entry) }
        case .setWindowEnd(let key, let end):
            buckets[key]?.validUntil = end
        }
    }

    /// The live buckets of `account` (its own and those of `cycleOf` subscriptions) of `meter`, in spend order:
    /// daily quotas, expiring credits by soonest end, top-ups.
    public func liveBuckets(account: AccountID?, cycleOf subscriptions: Set<String>, meter: String?, at now: Date) -> [CreditBucket] {
        buckets.values
            .filter { bucket in
                (bucket.accountId.map { $0 == account } ?? false
                    || bucket.originalTransactionId.map(subscriptions.contains) ?? false)
                    && (meter.map { $0 == bucket.meter } ?? true) && bucket.isLive(at: now)
            }
            .sorted {
                ($0.kind.spendRank, $0.validUntil ?? .distantFuture, $0.key)
                    < ($1.kind.spendRank, $1.validUntil ?? .distantFuture, $1.key)
            }
    }

    private mutating func record(_ entry: LedgerEntry) {
        entries.append(entry)
        postedKeys.insert(entry.operationKey)
        balances[entry.bucket, default: 0] += entry.delta
    }
}
