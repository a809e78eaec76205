import Entitlements
import Foundation

/// What an account may do right now: the answer of `GET /v1/accounts/{id}/status`, computed from its subscriptions
/// and its other entitlement sources (grants, one-time purchases) against the clock.
public struct AccountStatus: Sendable, Equatable {
    /// The account-level state of SPEC §5.2.
    public enum State: String, Sendable, Codable {
        case subscribed
        case trial
        case gracePeriod = "grace_period"
        case billingRetry = "billing_retry"
        case freeWithCredits = "free_with_credits"
        case freeNoCredits = "free_no_credits"
    }

    public var state: State
    public var entitled: Bool
    /// The subscription that decides the state (the entitled one, else the most recent).
    public var subscription: SubscriptionState?
    public var hadSubscription: Bool
    public var nextChangeAt: Date?

    /// Evaluates an account's subscriptions at `now`, with `otherSources` — its grants and one-time purchases, as
    /// sources at `now`. The state is the subscription's while it entitles (`trial`, `subscribed`, `grace_period`);
    /// otherwise `subscribed` when another source entitles; otherwise the subscription's `billing_retry`, else free.
    /// - Parameter hasFreeCredits: whether the free tier leaves credits to spend (decides `free_with_credits`).
    public static func evaluate(
        subscriptions: [SubscriptionState], otherSources: [EntitlementSource] = [], hasFreeCredits: Bool, now: Date
    ) -> AccountStatus {
        let ranked = subscriptions.sorted { lhs, rhs in
            let lhsRank = rank(lhs.effectiveStatus(at: now))
            let rhsRank = rank(rhs.effectiveStatus(at: now))
            if lhsRank != rhsRank { return lhsRank < rhsRank }
            return (lhs.expiresAt ?? .distantPast) > (rhs.expiresAt ?? .distantPast)
        }
        let chosen = ranked.first
        let othersEntitle = otherSources.contains(where: \.entitled)
        let free: State = hasFreeCredits ? .freeWithCredits : .freeNoCredits
        let state: State
        switch chosen?.effectiveStatus(at: now) {
        case .active: state = chosen?.isTrial == true ? .trial : .subscribed
        case .gracePeriod: state = .gracePeriod
        case .billingRetry: state = othersEntitle ? .subscribed : .billingRetry
        case .expired, .refunded, .revoked, nil: state = othersEntitle ? .subscribed : free
        }
        let changes = [chosen?.nextChange(after: now)].compactMap { $0 } + otherSources.compactMap(\.nextChangeAt)
        return AccountStatus(
            state: state,
            entitled: (chosen?.isEntitled(at: now) ?? false) || othersEntitle,
            subscription: chosen,
            hadSubscription: !subscriptions.isEmpty,
            nextChangeAt: changes.min()
        )
    }

    private static func rank(_ status: SubscriptionStatus) -> Int {
        switch status {
        case .active: return 0
        case .gracePeriod: return 1
        case .billingRetry: return 2
        case .expired, .refunded, .revoked: return 3
        }
    }
}
