import Entitlements
import Foundation
import Subscriptions

/// The events of sources other than subscriptions, and of the account-level rule over all sources: a grant that
/// started or ended, and auto-renewing sources that overlap. Keys name the change, so settling a source again never
/// emits twice.
public enum SourceChanges {
    /// `grant.started` while the grant entitles, `grant.ended` once it no longer does (ended by an operator or by its
    /// end), each once.
    public static func grant(_ record: EntitlementRecord, source: EntitlementSource, account: AccountID) -> [EventDraft] {
        guard record.kind == .grant else { return [] }
        let change = EventChange(
            reason: record.endReason?.text ?? record.reason, expiresAt: record.endedAt ?? record.endsAt, grantId: record.id,
            tier: record.tier)
        let cause = EventCause(eventId: "grant:\(record.id)", notificationType: "OPERATOR_GRANT")
        var drafts: [EventDraft] = []
        switch source.status {
        case .scheduled: break
        case .active:
            drafts.append(EventDraft(type: .grantStarted, key: "grant_started:\(record.id)", account: account, subscription: nil, environment: environment, change: change, cause: cause))
        default:
            drafts.append(EventDraft(type: .grantStarted, key: "grant_started:\(record.id)", account: account, subscription: nil, environment: environment, change: change, cause: cause))
            drafts.append(EventDraft(type: .grantEnded, key: "grant_ended:\(record.id)", account: account, subscription: nil, environment: environment, change: change, cause: cause))
        }
        return drafts
    }

    /// `account.overlapping_subscriptions` for each group in which the account now holds two or more entitling
    /// auto-renewing sources and did not before with the same sources — so the app can help the customer cancel one.
    public static func overlapping(before: AccountEntitlements?, after: AccountEntitlements, account: AccountID, environment: String, cause: EventCause)
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
    static let environment = "Production"
}
