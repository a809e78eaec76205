import Entitlements
import Foundation
import Subscriptions

/// Everything an account's status says at an instant — its state, entitling sources, tier, feature values and
/// credits — from what is stored of it: a pure function, so the service API, events, the dashboard, the CLI and the
/// scenario tests answer alike. Grants that are due by the clock count as if they were written.
public struct AccountStanding: Sendable, Equatable {
    public var status: AccountStatus
    public var credits: AccountCredits
    public var entitlements: AccountEntitlements
    /// Every defined feature's value for the account's tier (the free tier's when nothing entitles).
    public var features: [String: FeatureValue]
    public var subscriptions: [SubscriptionState]
    public var records: [EntitlementRecord]

    public init(
        status: AccountStatus, credits: AccountCredits, entitlements: AccountEntitlements, features: [String: FeatureValue],
        subscriptions: [SubscriptionState], records: [EntitlementRecord]
    ) {
        self.status = status
        self.credits = credits
        self.entitlements = entitlements
        self.features = features
        self.subscriptions = subscriptions
        self.records = records
    }

    /// - Parameters:
    ///   - records: the account's grants and one-time purchases.
    ///   - live: the account's buckets live at `now`, with balances.
    ///   - featureTable: ``TierCatalogue/featureTable()``, when the caller keeps it (it is resolved otherwise).
    ///   - held: what each meter has held by open holds, of its buckets live at `now`.
    ///   - heldWithoutBuckets: what each meter's holds taken while it was unlimited hold (they took from no bucket).
    public static func evaluate(
        account: AccountID, subscriptions: [SubscriptionState], records: [EntitlementRecord], live: [AccountCredits.LiveBalance],
        catalogue: TierCatalogue, now: Date, featureTable: [String: [String: FeatureValue]]? = nil, held: [String: Int64] = [:],
        heldWithoutBuckets: [String: Int64] = [:]
    ) -> AccountStanding {
        // Every source evaluated once, for the tier, the credits, the state and the entitlements alike.
        let others = records.map { catalogue.source(of: $0, at: now) }
        let entitlements = AccountEntitlements(subscriptions.map { catalogue.source(of: $0, at: now) } + others)
        let tier = AccountCredits.effectiveTier(entitlements, catalogue: catalogue)
        let due = AccountCredits.grantsDue(
            account: account, subscriptions: subscriptions, records: records, catalogue: catalogue, live: live, now: now, tier: tier)
        let credits = AccountCredits.evaluate(
            subscriptions: subscriptions, records: records, catalogue: catalogue, live: live, pending: due, now: now, tier: tier, held: held,
            heldWithoutBuckets: heldWithoutBuckets)
        let status = AccountStatus.evaluate(subscriptions: subscriptions, otherSources: others, hasFreeCredits: credits.hasCredits, now: now)
        return AccountStanding(
            status: status, credits: credits, entitlements: entitlements,
            features: Self.features(entitlements.isEntitled ? credits.tier : "free", catalogue: catalogue, table: featureTable),
            subscriptions: subscriptions,
            records: records)
    }

    static func features(_ tier: String?, catalogue: TierCatalogue, table: [String: [String: FeatureValue]]?) -> [String: FeatureValue] {
        if let table, let tier, let values = table[tier] { return values }
        return catalogue.features(ofTier: tier)
    }
}
