import Entitlements
import Foundation
import Subscriptions

/// The events of sources other than subscriptions, and of the account-level rule over all sources: a grant that
/// started or ended, and auto-renewing sources that overlap. Keys name the change, so settling a source again never
/// emits twice.
public enum SourceChanges {
    /// A grant's `grant.started` once it entitles and `grant.ended` once it no longer does (ended by an operator or by
    /// its end); a one-time purchase's `purchase.started` and `purchase.ended` (refunded, revoked, or a pass run out),
    /// so a reversed refund starts it again. Each once a change: `announced` is what the app's services were last told
    /// (``SourceAnnouncement``, ``announcement(of:)``). Without it (a source settled before it was kept) both are
    /// emitted as the source stands and their keys, per signed version, keep them once while the events are kept.
    public static func changes(
        _ record: EntitlementRecord, source: EntitlementSource, account: AccountID, announced: SourceAnnouncement? = nil
    ) -> [EventDraft] {
        let started: EventType
        let ended: EventType
        let key: String
        var change = EventChange(reason: record.endReason?.text, expiresAt: record.endedAt ?? source.expiresAt, tier: source.tier)
        let cause: EventCause
        switch record.kind {
        case .grant:
            (started, ended, key) = (.grantStarted, .grantEnded, record.id)
            change.reason = record.endReason?.text ?? record.reason
            change.grantId = record.id
            cause = EventCause(eventId: "grant:\(record.id)", notificationType: "OPERATOR_GRANT")
        case .purchase:
            (started, ended, key) = (.purchaseStarted, .purchaseEnded, "\(record.id):\(record.signedDate ?? 0)")
            change.productId = record.productId
            change.transactionId = record.id
            // As a subscription's events name theirs: one handler tells the three stores' purchases apart.
            change.store = record.store.text
            if source.status == .expired { change.reason = "EXPIRED" }
            cause = EventCause(transactionId: record.id)
        case .unknown:
            return []
        }
        let environment = record.environment ?? Self.environment
        func draft(_ type: EventType) -> EventDraft {
            EventDraft(
                type: type, key: "\(type.rawValue):\(key)", account: account, subscription: nil, environment: environment, change: change,
                cause: cause)
        }
        switch (announcement(of: source), announced) {
        case (nil, _), (.started, .started), (.ended, .ended): return []
        case (.started, _): return [draft(started)]
        case (.ended, .started): return [draft(ended)]
        case (.ended, nil): return [draft(started), draft(ended)]
        }
    }

    /// What the app's services are told of a source that stands as `source`: started while it entitles (or would, as an
    /// active source), ended once it no longer does; `nil` before it starts.
    public static func announcement(of source: EntitlementSource) -> SourceAnnouncement? {
        switch source.status {
        case .scheduled: return nil
        case .active: return .started
        default: return .ended
        }
    }

    /// `account.overlapping_subscriptions` for each group in which the account now holds two or more entitling
    /// auto-renewing sources and did not before with the same sources — so the app can help the customer cancel one.
    public static func overlapping(
        before: AccountEntitlements?, after: AccountEntitlements, account: AccountID, environment: StoreEnvironment, cause: EventCause
    )
        -> [EventDraft]
    {
        after.overlaps.sorted { $0.key < $1.key }.compactMap { group, sources in
            guard before?.overlaps[group] != sources else { return nil }
            return EventDraft(
                type: .accountOverlappingSubscriptions, key: "overlap:\(account.text):\(group):\(sources.joined(separator: ","))", account: account,
                subscription: nil, environment: environment, change: EventChange(group: group, sources: sources), cause: cause)
        }
    }

    /// Grants belong to no store environment; their events are `Production`'s.
    public static let environment = StoreEnvironment.production
}

/// What the app's services were last told of a grant or a one-time purchase.
public enum SourceAnnouncement: String, Sendable, Equatable, CaseIterable {
    case started
    case ended
}
