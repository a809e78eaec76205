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

    /// Applies every grant due at `now` that no job has made yet — this month's reset of an annual plan, today's
    /// quota, the free tier's month — then returns the account's credits. Call with the account locked.
    func credits(of account: UUID, subscriptions: [SubscriptionState], now: Date, on connection: PostgresConnection)
        async throws -> AccountCredits
    {
        let tier = effectiveTier(subscriptions, at: now)
        for state in subscriptions where state.isEntitled(at: now) {
            if let anchor = state.purchaseDate, let end = state.expiresAt,
                let month = CreditCalendar.monthIndex(anchor: anchor, end: end, at: now), month > 0
            {
                try await grantMonth(month, of: state, on: connection)
            }
        }
        let accountKey = account.uuidString.lowercased()
        for (meter, allowance) in tier.allowances.sorted(by: { $0.key < $1.key }) {
            if let perDay = allowance.perDay {
                let day = CreditCalendar.day(containing: now)
                let key = "daily:\(accountKey):\(meter):\(Self.dayText(day.start)):\(tier.id ?? "-")"
                try await open(Bucket(key: key, meter: meter, kind: .daily, accountId: account, window: day), on: connection)
                try await post("grant:\(key)", bucket: key, delta: perDay, reason: "daily quota", on: connection)
            }
            if tier.id == "free", let perCycle = allowance.perCycle {
                let month = CreditCalendar.month(containing: now)
                let key = "free:\(accountKey):\(meter):\(Self.dayText(month.start).prefix(7))"
                try await open(Bucket(key: key, meter: meter, kind: .free, accountId: account, window: month), on: connection)
                try await post("grant:\(key)", bucket: key, delta: perCycle, reason: "free tier month", on: connection)
            }
        }
        let live = try await liveBuckets(of: account, meter: nil, at: now, on: connection)
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

    /// Grants month `month` (1…11) of an annual plan's period — the monthly reset, keyed per (transaction, month).
    @discardableResult
    public func grantMonth(_ month: Int, of state: SubscriptionState, on connection: PostgresConnection) async throws -> DateInterval? {
        guard (1...11).contains(month), let (tier, product) = catalogue.tier(ofProduct: state.productId),
            product.billingPeriod?.resetsMonthly == true, let anchor = state.purchaseDate, let end = state.expiresAt
        else { return nil }
        let window = CreditCalendar.monthlyWindow(anchor: anchor, end: end, month: month)
        guard window.duration > 0 else { return nil }
        for (meter, allowance) in tier.allowances.sorted(by: { $0.key < $1.key }) {
            guard let amount = allowance.cycleGrant(isTrial: state.isTrial) else { continue }
            let bucket = Bucket(
                key: "cycle:\(state.latestTransactionId):m\(month):\(meter)", meter: meter, kind: .cycle,
                originalTransactionId: state.originalTransactionId, transactionId: state.latestTransactionId,
                window: window, price: state.price ?? product.price)
            try await open(bucket, on: connection)
            try await post("grant:\(state.latestTransactionId):m\(month):\(meter)", bucket: bucket.key, delta: amount, reason: "monthly reset", on: connection)
        }
        return window
    }

    static func dayText(_ date: Date) -> String {
        String(date.formatted(.iso8601.year().month().day().dateSeparator(.dash)))
    }
}
