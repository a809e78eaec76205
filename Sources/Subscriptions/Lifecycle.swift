import Foundation

/// The subscription lifecycle rules: pure functions from (current state, verified event, now) to the new state and
/// its effects.
///
/// Each event carries a snapshot of the subscription as of its `signedDate`. Events are applied in Apple's order
/// (``EventPosition``): an event newer than the last one applied is applied on top of the state; a duplicate changes
/// nothing; an event that arrives *after* a newer one was applied is ``Decision/Outcome-swift.enum/outOfOrder`` and
/// the caller rebuilds the state with ``replay(_:now:)`` from every stored event of the subscription. The state is
/// therefore always the in-order result, whatever the delivery order and however many duplicates arrive.
public enum Lifecycle {
    /// What applying one event decided.
    public struct Decision: Sendable, Equatable {
        public enum Outcome: String, Sendable {
            /// The event was the newest: the state is updated.
            case applied
            /// The event was applied before.
            case duplicate
            /// A newer event was applied first: rebuild with ``Lifecycle/replay(_:now:)``.
            case outOfOrder = "out_of_order"
        }

        public var state: SubscriptionState?
        public var effects: [LifecycleEffect]
        public var outcome: Outcome
    }

    /// Applies `event` to `current` (nil for a subscription never seen before).
    /// - Parameter now: only decides when effects are due; the state never depends on it.
    public static func apply(_ event: SubscriptionEvent, to current: SubscriptionState?, now: Date) -> Decision {
        if let current, event.position <= current.lastEvent {
            return Decision(state: current, effects: [], outcome: event.position == current.lastEvent ? .duplicate : .outOfOrder)
        }
        let (state, effects) = step(event, previous: current, now: now)
        return Decision(state: state, effects: effects, outcome: .applied)
    }

    /// The state and effects of applying every event of one subscription in order, duplicates once.
    public static func replay(_ events: [SubscriptionEvent], now: Date) -> Decision {
        var state: SubscriptionState?
        var effects: [LifecycleEffect] = []
        var seen = Set<String>()
        for event in events.sorted(by: { $0.position < $1.position }) where seen.insert(event.id).inserted {
            let step = step(event, previous: state, now: now)
            state = step.state
            effects += step.effects
        }
        return Decision(state: state, effects: effects, outcome: .applied)
    }

    /// One in-order step.
    static func step(_ event: SubscriptionEvent, previous: SubscriptionState?, now: Date)
        -> (state: SubscriptionState, effects: [LifecycleEffect])
    {
        if let previous, let kept = keepsPeriod(event, previous: previous) {
            var state = previous
            state.lastEvent = event.position
            state.lastEventType = event.notificationType
            if state.accountId == nil { state.accountId = event.claimant }
            return (state, kept)
        }
        let state = snapshot(event, previous: previous)
        var effects: [LifecycleEffect] = []
        if state.latestTransactionId != previous?.latestTransactionId, state.status.isRunning, let period = state.period {
            effects.append(.periodStarted(period, upgradedFrom: replacedPeriod(previous, by: period)))
        }
        if state.status.isRunning, let end = state.gracePeriodExpiresAt ?? state.expiresAt,
            let previousEnd = previous?.gracePeriodExpiresAt ?? previous?.expiresAt,
            previous?.latestTransactionId == state.latestTransactionId, end > previousEnd
        {
            effects.append(.periodExtended(transactionId: state.latestTransactionId, until: end))
        }
        let endAlreadyRecorded = previous.map {
            !$0.status.isRunning && $0.latestTransactionId == state.latestTransactionId && $0.endReason == state.endReason
        } ?? false
        if !state.status.isRunning, !endAlreadyRecorded {
            effects.append(.ended(reason: state.endReason ?? "EXPIRED_OTHER", transactionId: state.latestTransactionId, at: state.revokedAt ?? state.expiresAt))
        }
        if event.notificationType == "REFUND_REVERSED" {
            effects.append(.refundReversed(transactionId: event.transaction.transactionId))
        }
        if event.notificationType == "DID_RENEW", let previousEnd = previous?.expiresAt, let end = state.expiresAt, end <= previousEnd {
            effects.append(.recheckRenewal(after: max(previousEnd, now)))
        }
        return (state, effects)
    }

    /// The effects of an event that must not replace the current period — a refund or refund reversal of an
    /// earlier period, or a client's copy of a transaction no newer than the one in force — or `nil` when the
    /// event's snapshot applies.
    static func keepsPeriod(_ event: SubscriptionEvent, previous: SubscriptionState) -> [LifecycleEffect]? {
        let transaction = event.transaction
        let isEarlierPeriod: Bool = {
            guard transaction.transactionId != previous.latestTransactionId else { return false }
            guard let end = transaction.expiresDate.map(date(milliseconds:)), let currentEnd = previous.expiresAt else {
                return false
            }
            return end < currentEnd
        }()
        if event.claimant != nil {
            let isSameOrEarlier = transaction.transactionId == previous.latestTransactionId || isEarlierPeriod
            return isSameOrEarlier && transaction.revocationDate == nil ? [] : nil
        }
        guard isEarlierPeriod else { return nil }
        switch event.notificationType {
        case "REFUND":
            let prorated = transaction.revocationType == "REFUND_PRORATED" ? transaction.revocationPercentage : nil
            return [.earlierPeriodRefunded(transactionId: transaction.transactionId, milliPercent: prorated)]
        case "REFUND_REVERSED": return [.refundReversed(transactionId: transaction.transactionId)]
        default: return nil
        }
    }

    /// The running period `period` replaced before its end — an immediate upgrade or crossgrade — if any.
    static func replacedPeriod(_ previous: SubscriptionState?, by period: LifecycleEffect.Period) -> LifecycleEffect.Period? {
        guard let previous, previous.status.isRunning, let old = previous.period, old.productId != period.productId,
            period.start < old.end, period.start >= old.start
        else { return nil }
        return old
    }

    static func date(milliseconds: Int64) -> Date { Date(timeIntervalSince1970: Double(milliseconds) / 1000) }
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
