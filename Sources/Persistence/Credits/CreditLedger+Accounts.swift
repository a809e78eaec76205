import Credits
import Foundation
import PostgresNIO
import Subscriptions

/// What an account has of one meter right now (the `credits` entries of the status answer).
public struct MeterCredits: Codable, Sendable, Equatable {
    /// Everything spendable now; `nil` when the meter is unlimited.
    public var remaining: Int64?
    /// Cycle credits (monthly for annual plans; the calendar month on the free tier); `nil` without a cycle allowance.
    public var cycle: Int64?
    public var topUp: Int64
    /// When the cycle (or else the daily quota) next resets.
    public var resetsAt: Date?
    /// What is left of today's quota; `nil` without a daily allowance.
    public var dailyRemaining: Int64?
    public var unlimited: Bool
}

/// An account's tier and credits.
public struct AccountCredits: Sendable, Equatable {
    /// The tier id of the entitled subscription (the highest level), `free` without one, `nil` when the entitled
    /// product is not in the catalogue.
    public var tier: String?
    public var meters: [String: MeterCredits]

    /// Whether anything is left to spend (decides `free_with_credits`).
    public var hasCredits: Bool { meters.values.contains { $0.unlimited || ($0.remaining ?? 0) > 0 } }
}

extension CreditLedger {
    /// The tier that decides an account's allowances at `now`: the highest level among its entitled subscriptions,
    /// else the free tier.
    func effectiveTier(_ subscriptions: [SubscriptionState], at now: Date) -> (id: String?, allowances: [String: Allowance]) {
        let entitled = subscriptions.filter { $0.isEntitled(at: now) }
        let tiers = entitled.compactMap { catalogue.tier(ofProduct: $0.productId)?.tier }
        if let best = tiers.min(by: { $0.level < $1.level }) { return (best.id, best.allowances) }
        if !entitled.isEmpty { return (nil, [:]) }
        return ("free", catalogue.free.allowances)
    }

    /// A grant due at an instant that may not be in the ledger yet.
    struct DueGrant {
        var bucket: Bucket
        var operationKey: String
        var amount: Int64
        var reason: String
    }

    /// The grants due at `now` that no job may have made yet: this month's reset of an annual plan, today's quota,
    /// the free tier's month.
    func dueGrants(of account: UUID, subscriptions: [SubscriptionState], tier: (id: String?, allowances: [String: Allowance]), now: Date)
        -> [DueGrant]
    {
        var grants: [DueGrant] = []
        for state in subscriptions where state.isEntitled(at: now) {
            if let anchor = state.purchaseDate, let end = state.expiresAt,
                let month = CreditCalendar.monthIndex(anchor: anchor, end: end, at: now), month > 0
            {
                grants += monthGrants(month, of: state)
            }
        }
        let accountKey = account.uuidString.lowercased()
        for (meter, allowance) in tier.allowances.sorted(by: { $0.key < $1.key }) {
            if let perDay = allowance.perDay {
                let day = CreditCalendar.day(containing: now)
                let key = "daily:\(accountKey):\(meter):\(Self.dayText(day.start)):\(tier.id ?? "-")"
                grants.append(DueGrant(
                    bucket: Bucket(key: key, meter: meter, kind: .daily, accountId: account, window: day),
                    operationKey: "grant:\(key)", amount: perDay, reason: "daily quota"))
            }
            if tier.id == "free", let perCycle = allowance.perCycle {
                let month = CreditCalendar.month(containing: now)
                let key = "free:\(accountKey):\(meter):\(Self.dayText(month.start).prefix(7))"
                grants.append(DueGrant(
                    bucket: Bucket(key: key, meter: meter, kind: .free, accountId: account, window: month),
                    operationKey: "grant:\(key)", amount: perCycle, reason: "free tier month"))
            }
        }
        return grants
    }

    /// An account's credits at `now`. With `materialize` (spending; account locked) every due grant is written
    /// first; without it (status reads) due grants not written yet are counted as if they were, and nothing is
    /// written — looking at an account never adds ledger rows.
    func credits(
        of account: UUID, subscriptions: [SubscriptionState], now: Date, materialize: Bool, on connection: PostgresConnection
    ) async throws -> AccountCredits {
        let tier = effectiveTier(subscriptions, at: now)
        let due = dueGrants(of: account, subscriptions: subscriptions, tier: tier, now: now)
        if materialize {
            for grant in due {
                try await post(grant.operationKey, opening: grant.bucket, delta: grant.amount, reason: grant.reason, on: connection)
            }
        }
        var live = try await liveBuckets(of: account, meter: nil, at: now, on: connection)
        if !materialize {
            let present = Set(live.map(\.key))
            for grant in due where !present.contains(grant.bucket.key) {
                live.append(LiveBucket(
                    key: grant.bucket.key, meter: grant.bucket.meter, kind: grant.bucket.kind.rawValue,
                    validUntil: grant.bucket.window?.end, balance: grant.amount))
            }
        }
        var meters: [String: MeterCredits] = [:]
        for meter in catalogue.meters {
            let allowance = tier.allowances[meter.id]
            let buckets = live.filter { $0.meter == meter.id }
            let cycleBuckets = buckets.filter { $0.kind == "cycle" || $0.kind == "free" }
            let dailyBuckets = buckets.filter { $0.kind == "daily" }
            let topUp = buckets.filter { $0.kind == "topup" }.reduce(0) { $0 + max($1.balance, 0) }
            let cycleTotal = cycleBuckets.reduce(0) { $0 + max($1.balance, 0) }
            let cycle: Int64? = allowance?.perCycle != nil || cycleTotal > 0 ? cycleTotal : nil
            let daily: Int64? = allowance?.perDay != nil ? dailyBuckets.reduce(0) { $0 + max($1.balance, 0) } : nil
            let unlimited = allowance?.isUnlimited == true
            meters[meter.id] = MeterCredits(
                remaining: unlimited ? nil : (cycle ?? 0) + topUp + (daily ?? 0), cycle: cycle, topUp: topUp,
                resetsAt: (cycle == nil ? nil : cycleBuckets.compactMap(\.validUntil).min())
                    ?? (daily == nil ? nil : dailyBuckets.compactMap(\.validUntil).min()),
                dailyRemaining: daily, unlimited: unlimited)
        }
        return AccountCredits(tier: tier.id, meters: meters)
    }

    /// The grants of month `month` (1…11) of an annual plan's period — the monthly reset, keyed per (transaction,
    /// month) — one per meter with a cycle allowance.
    func monthGrants(_ month: Int, of state: SubscriptionState) -> [DueGrant] {
        guard (1...11).contains(month), let (tier, product) = catalogue.tier(ofProduct: state.productId),
            product.billingPeriod?.resetsMonthly == true, let anchor = state.purchaseDate, let end = state.expiresAt
        else { return [] }
        let window = CreditCalendar.monthlyWindow(anchor: anchor, end: end, month: month)
        guard window.duration > 0 else { return [] }
        return tier.allowances.sorted(by: { $0.key < $1.key }).compactMap { meter, allowance in
            allowance.cycleGrant(isTrial: state.isTrial).map { amount in
                DueGrant(
                    bucket: Bucket(
                        key: "cycle:\(state.latestTransactionId):m\(month):\(meter)", meter: meter, kind: .cycle,
                        originalTransactionId: state.originalTransactionId, transactionId: state.latestTransactionId,
                        window: window, price: state.price ?? product.price),
                    operationKey: "grant:\(state.latestTransactionId):m\(month):\(meter)", amount: amount, reason: "monthly reset")
            }
        }
    }

    /// Writes month `month`'s grants (the monthly reset job); returns the month's window, or nil when the plan has
    /// no such month.
    @discardableResult
    public func grantMonth(_ month: Int, of state: SubscriptionState, on connection: PostgresConnection) async throws -> DateInterval? {
        let grants = monthGrants(month, of: state)
        for grant in grants {
            try await post(grant.operationKey, opening: grant.bucket, delta: grant.amount, reason: grant.reason, on: connection)
        }
        guard let anchor = state.purchaseDate, let end = state.expiresAt, !grants.isEmpty else { return nil }
        return CreditCalendar.monthlyWindow(anchor: anchor, end: end, month: month)
    }

    static func dayText(_ date: Date) -> String {
        String(date.formatted(.iso8601.year().month().day().dateSeparator(.dash)))
    }
}
