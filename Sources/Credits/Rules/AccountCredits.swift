import Entitlements
import Foundation
import Subscriptions

/// What an account has of one meter right now (the `credits` entries of the status answer).
public struct MeterCredits: Codable, Sendable, Equatable {
    /// Everything spendable now; `nil` when the meter is unlimited.
    public var remaining: Int64?
    /// Credits of the current window (monthly for annual plans; the calendar month on the free tier); `nil` without a
    /// cycle allowance.
    public var cycle: Int64?
    public var topUp: Int64
    /// When the cycle (or else the daily quota) next resets.
    public var resetsAt: Date?
    /// What is left of today's quota; `nil` without a daily allowance.
    public var dailyRemaining: Int64?
    public var unlimited: Bool
    /// Credits held by open holds: out of `remaining` until a hold settles, is released or expires.
    public var held: Int64 = 0
}

/// An account's tier and credits, and the account-level credit rules: which tier decides, and which grants fall due
/// by the clock alone (a subscription's next credit window, today's quota, the free tier's month).
public struct AccountCredits: Sendable, Equatable {
    /// The tier id of the entitled subscription (the highest level), `free` without one, `nil` when the entitled
    /// product is not in the catalogue.
    public var tier: String?
    public var meters: [String: MeterCredits]

    /// Whether anything is left to spend (decides `free_with_credits`).
    public var hasCredits: Bool { meters.values.contains { $0.unlimited || ($0.remaining ?? 0) > 0 } }

    /// A live bucket and its balance.
    public struct LiveBalance: Sendable, Equatable {
        public var bucket: CreditBucket
        public var balance: Int64

        public init(bucket: CreditBucket, balance: Int64) {
            self.bucket = bucket
            self.balance = balance
        }
    }

    /// The tier that decides an account's allowances at `now`: the deciding tier of its entitling sources (the
    /// highest level, ``AccountEntitlements``), else the free tier; no tier (`nil`) when the deciding source's product
    /// is not in the catalogue.
    public static func effectiveTier(
        _ subscriptions: [SubscriptionState], records: [EntitlementRecord] = [], catalogue: TierCatalogue, at now: Date
    ) -> (id: String?, allowances: [String: Allowance]) {
        effectiveTier(AccountEntitlements(catalogue.sources(subscriptions: subscriptions, records: records, at: now)), catalogue: catalogue)
    }

    /// The tier that decides, from the account's entitlements evaluated already.
    public static func effectiveTier(_ entitlements: AccountEntitlements, catalogue: TierCatalogue) -> (id: String?, allowances: [String: Allowance])
    {
        guard let deciding = entitlements.deciding else { return ("free", catalogue.free.allowances) }
        guard let tier = deciding.tier.flatMap({ catalogue.tier(id: $0) }) else { return (nil, [:]) }
        return (tier.id, tier.allowances)
    }

    /// The grants due at `now` that no job may have made yet: the current credit window of each entitled
    /// subscription, today's quota, the free tier's month. `live` are the account's live buckets.
    /// - Parameter tier: the effective tier, when the caller evaluated it already.
    public static func grantsDue(
        account: AccountID, subscriptions: [SubscriptionState], records: [EntitlementRecord] = [], catalogue: TierCatalogue,
        live: [LiveBalance], now: Date, tier: (id: String?, allowances: [String: Allowance])? = nil
    ) -> [LedgerOperation] {
        var grants: [LedgerOperation] = []
        for record in records { grants += SourceCredits.grantsDue(record, account: account, catalogue: catalogue, live: live, now: now) }
        for state in subscriptions where state.isEntitled(at: now) {
            guard let start = state.purchaseDate, let end = state.expiresAt,
                let (tier, _) = catalogue.tier(ofProduct: state.productId),
                let window = catalogue.windows(
                    productId: state.productId, offer: state.offer, start: start, end: end, billedMonthly: state.billingPlan == .monthly
                )
                .first(where: { $0.start <= now && now < $0.end })
            else { continue }
            let identities: Set<String> = [state.billingPeriodKey, state.latestTransactionId]
            for (meter, allowance) in tier.allowances.sorted(by: { $0.key < $1.key }) {
                guard let amount = allowance.cycleGrant(isTrial: state.offer?.discountType == .freeTrial) else { continue }
                let present = live.contains {
                    $0.bucket.meter == meter && $0.bucket.windowIndex == window.index
                        && $0.bucket.billingPeriod.map(identities.contains) ?? false
                }
                guard !present else { continue }
                let bucket = CreditBucket(
                    key: "cycle:\(state.billingPeriodKey):w\(window.index):\(meter)", meter: meter, kind: .cycle,
                    originalTransactionId: state.originalTransactionId, billingPeriod: state.billingPeriodKey,
                    validFrom: window.start, validUntil: window.end, price: state.price)
                grants.append(
                    .post(
                        LedgerEntry(
                            operationKey: "grant:\(state.billingPeriodKey):w\(window.index):\(meter)", bucket: bucket.key, delta: amount,
                            reason: "window grant"), opening: bucket))
            }
        }
        let tier = tier ?? effectiveTier(subscriptions, records: records, catalogue: catalogue, at: now)
        let accountKey = account.text
        for (meter, allowance) in tier.allowances.sorted(by: { $0.key < $1.key }) {
            if let perDay = allowance.perDay {
                let day = CreditCalendar.day(containing: now)
                let key = "daily:\(accountKey):\(meter):\(dayText(day.start)):\(tier.id ?? "-")"
                let bucket = CreditBucket(key: key, meter: meter, kind: .daily, accountId: account, validFrom: day.start, validUntil: day.end)
                grants.append(.post(LedgerEntry(operationKey: "grant:\(key)", bucket: key, delta: perDay, reason: "daily quota"), opening: bucket))
            }
            if tier.id == "free", let perCycle = allowance.perCycle {
                let month = CreditCalendar.month(containing: now)
                let key = "free:\(accountKey):\(meter):\(dayText(month.start).prefix(7))"
                let bucket = CreditBucket(key: key, meter: meter, kind: .free, accountId: account, validFrom: month.start, validUntil: month.end)
                grants.append(
                    .post(LedgerEntry(operationKey: "grant:\(key)", bucket: key, delta: perCycle, reason: "free tier month"), opening: bucket))
            }
        }
        return grants.filter { operation in
            guard case .post(_, let bucket?) = operation else { return true }
            return !live.contains { $0.bucket.key == bucket.key }
        }
    }

    /// The account's credits from its live buckets at `now` — `pending` grants not written yet count as if they were.
    /// `held` is what open holds took from those buckets; `heldWithoutBuckets` what holds taken while their meter was
    /// unlimited hold, which took from no bucket: held while the meter is unlimited, and nothing once it is counted
    /// (they keep nothing out of `remaining`).
    public static func evaluate(
        subscriptions: [SubscriptionState], records: [EntitlementRecord] = [], catalogue: TierCatalogue, live: [LiveBalance],
        pending: [LedgerOperation] = [], now: Date, tier: (id: String?, allowances: [String: Allowance])? = nil, held: [String: Int64] = [:],
        heldWithoutBuckets: [String: Int64] = [:]
    ) -> AccountCredits {
        let tier = tier ?? effectiveTier(subscriptions, records: records, catalogue: catalogue, at: now)
        var live = live
        for case .post(let entry, let bucket?) in pending where !live.contains(where: { $0.bucket.key == bucket.key }) {
            live.append(LiveBalance(bucket: bucket, balance: entry.delta))
        }
        var meters: [String: MeterCredits] = [:]
        for meter in catalogue.meters {
            let allowance = tier.allowances[meter.id]
            let buckets = live.filter { $0.bucket.meter == meter.id }
            let cycleBuckets = buckets.filter { [.cycle, .free, .entitlement].contains($0.bucket.kind) }
            let dailyBuckets = buckets.filter { $0.bucket.kind == .daily }
            let topUp = buckets.filter { $0.bucket.kind == .topUp }.reduce(0) { $0 + max($1.balance, 0) }
            let cycleTotal = cycleBuckets.reduce(0) { $0 + max($1.balance, 0) }
            let cycle: Int64? = allowance?.perCycle != nil || cycleTotal > 0 ? cycleTotal : nil
            // A quota of the tier the account had earlier today is still spent first (see `Spending`), so it counts.
            let daily: Int64? = allowance?.perDay != nil || !dailyBuckets.isEmpty ? dailyBuckets.reduce(0) { $0 + max($1.balance, 0) } : nil
            let unlimited = allowance?.isUnlimited == true
            // What a spend can take: every live bucket of the meter, whatever its kind.
            let spendable = buckets.reduce(0) { $0 + max($1.balance, 0) }
            // Each part is at most Int64.max (sql/0068's sums): their sum is kept there, not trapped.
            let (held, overflow) = (held[meter.id] ?? 0).addingReportingOverflow(unlimited ? heldWithoutBuckets[meter.id] ?? 0 : 0)
            meters[meter.id] = MeterCredits(
                remaining: unlimited ? nil : spendable, cycle: cycle, topUp: topUp,
                resetsAt: (cycle == nil ? nil : cycleBuckets.compactMap(\.bucket.validUntil).min())
                    ?? (daily == nil ? nil : dailyBuckets.compactMap(\.bucket.validUntil).min()),
                dailyRemaining: daily, unlimited: unlimited, held: overflow ? .max : held)
        }
        return AccountCredits(tier: tier.id, meters: meters)
    }

    static func dayText(_ date: Date) -> String {
        String(date.formatted(.iso8601.year().month().day().dateSeparator(.dash)))
    }
}
