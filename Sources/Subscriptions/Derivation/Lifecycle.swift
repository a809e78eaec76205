import AppStoreModels
import Entitlements
import Foundation

/// The subscription lifecycle rules: a pure function from a subscription's signed facts to its state.
///
/// The period in force is the newest billing period that no upgrade superseded; a refund, reversal, consumption
/// request, decline or claim about any other transaction changes that transaction's facts, never which period is in
/// force. Apple's newest report (`data.status`, else its notification type) decides the status of the period in
/// force unless the period is newer than the report. Because ``SubscriptionFacts`` merge as "newest version per key",
/// every delivery order with any duplicates derives the same state; a replay is simply "derive again".
public enum Lifecycle {
    /// What the facts of one subscription amount to.
    public struct Derivation: Sendable, Equatable {
        public var state: SubscriptionState
        /// Every billing period, oldest first.
        public var periods: [PaidPeriod]
        /// Every end to archive: expiries Apple reported, refunds and revocations of any period.
        public var ends: [End]
        /// When access ends other than by the periods running out: at a refund or revocation of the period in force,
        /// at Apple's report of an expiry, refund, revocation or billing retry (whichever transaction it named), or at
        /// the end of a grace period. Credit windows close there.
        public var accessEndsAt: Date?
        /// The ``PaidPeriod/key``s of periods whose renewal the store reported as recovering from a billing failure
        /// (Apple's `DID_RENEW` with subtype `BILLING_RECOVERY`).
        public var recoveredPeriods: Set<String>
        /// Whether `state.accountId` is the app's own claim (`POST /v1/accounts/{id}/transactions`, Play's
        /// `…/google/purchases`): filed under the account as claimed even where that id was erased before. An erasure
        /// moves every claim naming the id to its pseudonym, so a claim that still names it was made since: the app
        /// saying that this purchase is the account's now (an id used again), not the store repeating an old one.
        public var ownerClaimed: Bool

        public init(
            state: SubscriptionState, periods: [PaidPeriod], ends: [End], accessEndsAt: Date?, recoveredPeriods: Set<String> = [],
            ownerClaimed: Bool = false
        ) {
            self.state = state
            self.periods = periods
            self.ends = ends
            self.accessEndsAt = accessEndsAt
            self.recoveredPeriods = recoveredPeriods
            self.ownerClaimed = ownerClaimed
        }

        /// Every transaction id of every period, each once, in order: what the support search files.
        public var transactionIds: [String] { Array(Set(periods.flatMap(\.transactionIds))).sorted() }
    }

    /// One archived end of a subscription's period.
    public struct End: Hashable, Sendable {
        public var transactionId: String
        public var reason: EndReason
        public var at: Date?
    }

    /// Derives a subscription's state from its facts; `nil` when they hold no transaction.
    /// - Parameter purchaseIntents: the accounts of the `appAccountToken`s the app asked for (lowercased token → account).
    public static func derive(_ facts: SubscriptionFacts, purchaseIntents: [String: AccountID] = [:]) -> Derivation? {
        let periods = PaidPeriod.periods(of: facts)
        let inForce = periods.last { !$0.isUpgraded } ?? periods.last
        guard let newest = inForce.map({ Transaction(period: $0) }) ?? newestUndated(facts) else { return nil }
        let verdict = status(of: newest, facts: facts)
        let renewal = facts.renewalInfo?.value
        let autoRenewProductId = renewal?.autoRenewProductId ?? newest.productId
        let commitment = newest.period?.commitment.map { SubscriptionState.Commitment.of($0, productId: newest.productId, renewal: renewal) }
        // A commitment's months bill whatever its own renewal says, until the last: that one renews only into a new
        // commitment.
        let billsAgain = willRenew(facts) && !(commitment.map { $0.isFinalMonth && $0.renewsTo == nil } ?? false)
        let inBillingTrouble = verdict.status == .gracePeriod || verdict.status == .billingRetry
        let owner = owner(facts: facts, periods: periods, purchaseIntents: purchaseIntents)
        let state = SubscriptionState(
            originalTransactionId: facts.originalTransactionId,
            accountId: owner?.account,
            productId: newest.productId,
            environment: facts.environment,
            status: verdict.status,
            willRenew: verdict.status.isRunning && billsAgain,
            autoRenewProductId: autoRenewProductId,
            pendingProductId: autoRenewProductId == newest.productId ? nil : autoRenewProductId,
            purchaseDate: newest.period?.start,
            expiresAt: newest.period?.end,
            gracePeriodExpiresAt: verdict.status == .gracePeriod ? renewal?.gracePeriodExpiresDate.map(date(milliseconds:)) : nil,
            isTrial: newest.period?.isIntroductoryTrial ?? false,
            ownership: Ownership(newest.period?.ownership ?? "PURCHASED"),
            latestTransactionId: newest.transactionId,
            lastEventType: lastEventType(facts),
            lastEvent: facts.newestEvent ?? EventPosition(signedDate: 0, eventId: ""),
            endReason: verdict.endReason,
            revokedAt: verdict.status == .refunded || verdict.status == .revoked ? newest.period?.revocation?.date : nil,
            offer: newest.period?.offer,
            priceIncrease: priceIncrease(facts),
            price: newest.period?.price,
            billingPeriodKey: newest.period?.key ?? newest.transactionId,
            accessUntil: verdict.accessUntil,
            billingPlan: newest.period?.billedMonthly == true ? .monthly : .billedUpfront,
            commitment: commitment,
            winBackOfferIds: inBillingTrouble ? [] : renewal?.eligibleWinBackOfferIds ?? [],
            appTransactionId: appTransactionId(facts)
        )
        return Derivation(
            state: state, periods: periods, ends: ends(facts: facts, periods: periods, state: state),
            accessEndsAt: verdict.endedAt ?? (state.status == .gracePeriod ? state.clockEnd : nil),
            recoveredPeriods: recoveredPeriods(facts: facts, periods: periods), ownerClaimed: owner?.claimed ?? false)
    }

    /// The customer's `appTransactionId`: the newest renewal info's, else the newest transaction's that carries one.
    static func appTransactionId(_ facts: SubscriptionFacts) -> String? {
        facts.renewalInfo?.value.appTransactionId
            ?? facts.transactions.values.filter { $0.value.appTransactionId != nil }.max { $0.position < $1.position }?.value.appTransactionId
    }

    /// The periods Apple reported as renewed after a billing failure.
    static func recoveredPeriods(facts: SubscriptionFacts, periods: [PaidPeriod]) -> Set<String> {
        let recovered = Set(facts.reports.values.filter { $0.type == .didRenew && $0.subtype == .billingRecovery }.map(\.transactionId))
        guard !recovered.isEmpty else { return [] }
        return Set(periods.filter { !recovered.isDisjoint(with: $0.transactionIds) }.map(\.key))
    }

    /// The facts a state is derived from, for the newest version of each: a transaction with its billing period when
    /// it has dates.
    struct Transaction {
        var transactionId: String
        var productId: String
        var period: PaidPeriod?

        init(period: PaidPeriod) {
            transactionId = period.transactionId
            productId = period.productId
            self.period = period
        }

        init(transactionId: String, productId: String) {
            self.transactionId = transactionId
            self.productId = productId
        }
    }

    /// The newest transaction when none has dates (Apple always sends them; this keeps odd data from vanishing).
    private static func newestUndated(_ facts: SubscriptionFacts) -> Transaction? {
        facts.transactions.values.max { $0.position < $1.position }.map {
            Transaction(transactionId: $0.value.transactionId, productId: $0.value.productId)
        }
    }

    /// Whether the subscription renews: the newest renewal info's `autoRenewStatus`, else the newest
    /// `DID_CHANGE_RENEWAL_STATUS` subtype, else yes.
    static func willRenew(_ facts: SubscriptionFacts) -> Bool {
        if let status = facts.renewalInfo?.value.autoRenewStatus { return status == 1 }
        for report in facts.reportsInOrder.reversed() {
            switch report.subtype {
            case .autoRenewDisabled: return false
            case .autoRenewEnabled: return true
            default: continue
            }
        }
        return true
    }

    /// Consent to a price increase: the renewal info's `priceIncreaseStatus` (absent when none is in progress), else
    /// the newest `PRICE_INCREASE` subtype.
    static func priceIncrease(_ facts: SubscriptionFacts) -> SubscriptionState.PriceIncreaseConsent? {
        if let renewal = facts.renewalInfo?.value {
            switch renewal.priceIncreaseStatus {
            case 0?: return .pending
            case 1?: return .accepted
            default: return nil
            }
        }
        switch facts.reportsInOrder.last(where: { $0.type == .priceIncrease })?.subtype {
        case .pending?: return .pending
        case .accepted?: return .accepted
        default: return nil
        }
    }

    /// The type of the newest event: a notification's, a Server API snapshot's or a claim's.
    static func lastEventType(_ facts: SubscriptionFacts) -> NotificationType {
        guard let newest = facts.newestEvent else { return .clientTransaction }
        return facts.reports[newest.eventId]?.type ?? .clientTransaction
    }

    /// Every end to archive: each expiry Apple reported, each refunded or revoked period, and the current end.
    static func ends(facts: SubscriptionFacts, periods: [PaidPeriod], state: SubscriptionState) -> [End] {
        var ends = Set<End>()
        let expiry = Dictionary(periods.flatMap { period in period.transactionIds.map { ($0, period.end) } }) { first, _ in first }
        for report in facts.reports.values where report.type == .expired {
            let reason = EndReason.expired(report.subtypeName ?? "OTHER")
            ends.insert(End(transactionId: report.transactionId, reason: reason, at: expiry[report.transactionId]))
        }
        for period in periods {
            guard let revocation = period.revocation else { continue }
            ends.insert(End(transactionId: period.transactionId, reason: revocationReason(period, facts: facts), at: revocation.date))
        }
        // The current end, unless a report of the same kind recorded it already (an EXPIRED notification).
        if !state.status.isRunning, let reason = state.endReason, !ends.contains(where: { $0.reason == reason }) {
            ends.insert(End(transactionId: state.latestTransactionId, reason: reason, at: state.revokedAt ?? state.expiresAt))
        }
        return ends.sorted { ($0.transactionId, $0.reason.text) < ($1.transactionId, $1.reason.text) }
    }

    /// `REVOKE` for Family Sharing revocations (`FAMILY_REVOKE`, or a `REVOKE` notification about the period),
    /// `REFUND` otherwise.
    static func revocationReason(_ period: PaidPeriod, facts: SubscriptionFacts) -> EndReason {
        if period.revocation?.type == "FAMILY_REVOKE" { return .revoke }
        let revoked = facts.reports.values.contains { $0.type == .revoke && period.transactionIds.contains($0.transactionId) }
        return revoked ? .revoke : .refund
    }

    static func date(milliseconds: Int64) -> Date { Date(timeIntervalSince1970: Double(milliseconds) / 1000) }
    static func milliseconds(_ date: Date) -> Int64 { Int64((date.timeIntervalSince1970 * 1000).rounded()) }
}

extension SubscriptionStatus {
    /// Whether the subscription can still renew (not ended).
    public var isRunning: Bool {
        switch self {
        case .active, .gracePeriod, .billingRetry: return true
        case .expired, .refunded, .revoked: return false
        }
    }
}
