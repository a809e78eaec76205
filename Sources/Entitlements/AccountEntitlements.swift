import Foundation

/// The account-level rule over every source an account holds, whatever its store:
///
/// - the account is entitled when any source entitles;
/// - its tier — and so its feature values and the allowances that are per account (daily quotas, unlimited meters) —
///   is the highest-level tier among the entitling sources (1 is the highest; ties go to the source that lasts
///   longest);
/// - each source grants its own credit windows (the credit rules);
/// - two entitling auto-renewing sources of tiers in one group overlap: the customer pays twice for one thing.
public struct AccountEntitlements: Sendable, Equatable {
    /// The entitling sources, the deciding one first.
    public var entitling: [EntitlementSource]
    /// When any source's state next changes by the clock alone.
    public var nextChangeAt: Date?
    /// Each group of overlapping auto-renewing sources (their ids, sorted), by group name.
    public var overlaps: [String: [String]]

    public var isEntitled: Bool { !entitling.isEmpty }
    /// The source whose tier decides.
    public var deciding: EntitlementSource? { entitling.first }

    public init(_ sources: [EntitlementSource]) {
        entitling = sources.filter(\.entitled).sorted(by: Self.decidesBefore)
        nextChangeAt = sources.compactMap(\.nextChangeAt).min()
        var byGroup: [String: [String]] = [:]
        for source in entitling where source.isAutoRenewing && source.tier != nil {
            byGroup[source.group ?? "default", default: []].append(source.id)
        }
        overlaps = byGroup.filter { $0.value.count > 1 }.mapValues { $0.sorted() }
    }

    /// Higher level first (a product outside the catalogue last), then the one that lasts longest, then by id so
    /// every reader picks alike.
    static func decidesBefore(_ lhs: EntitlementSource, _ rhs: EntitlementSource) -> Bool {
        let lhsLevel = lhs.level ?? Int.max
        let rhsLevel = rhs.level ?? Int.max
        if lhsLevel != rhsLevel { return lhsLevel < rhsLevel }
        let lhsEnd = lhs.expiresAt ?? .distantFuture
        let rhsEnd = rhs.expiresAt ?? .distantFuture
        if lhsEnd != rhsEnd { return lhsEnd > rhsEnd }
        return lhs.id < rhs.id
    }
}
