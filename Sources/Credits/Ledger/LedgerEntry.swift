import Foundation

/// One row of the append-only credit ledger: a signed change of one bucket, unique by its operation key.
public struct LedgerEntry: Hashable, Sendable {
    public var operationKey: String
    public var bucket: String
    public var delta: Int64
    public var reason: String

    public init(operationKey: String, bucket: String, delta: Int64, reason: String) {
        self.operationKey = operationKey
        self.bucket = bucket
        self.delta = delta
        self.reason = reason
    }

    /// Whether the row grants a window's credits (a grant, or a correction of one).
    public var isGrant: Bool { operationKey.hasPrefix("grant:") || operationKey.hasPrefix("correction:") }
}

/// What the rules ask persistence to do. Ledger rows are only ever appended; a bucket's window can move when the facts
/// say it closes earlier or later (an upgrade, a grace period, a renewal extension).
public enum LedgerOperation: Hashable, Sendable {
    /// Opens `bucket` unless it exists and appends `entry` unless its operation key is posted.
    case post(LedgerEntry, opening: CreditBucket?)
    /// Moves the end of a bucket's window.
    case setWindowEnd(bucket: String, end: Date?)
}
