import Foundation
import Logging
import PostgresNIO
import Subscriptions

/// The one code path that changes a subscription: lock it, apply the event with the lifecycle rules — replaying
/// every stored event when this one arrived out of order — save the state and record the effects (archive, credit
/// ledger), inside the caller's transaction.
public struct SubscriptionWriter: Sendable {
    private let subscriptions: SubscriptionStore
    private let history: SubscriptionHistory
    private let archive: SubscriptionArchive
    private let credits: CreditLedger
    private let rechecks: RenewalRechecks?

    /// - Parameter rechecks: schedules late-renewal rechecks; `nil` when the App Store Server API is not configured.
    public init(client: PostgresClient, credits: CreditLedger, rechecks: RenewalRechecks?, logger: Logger) {
        self.subscriptions = SubscriptionStore(client: client, logger: logger)
        self.history = SubscriptionHistory(logger: logger)
        self.archive = SubscriptionArchive(logger: logger)
        self.credits = credits
        self.rechecks = rechecks
    }

    /// Applies `event` (already stored, so a replay finds it) to its subscription. `lockHeld`: the caller's
    /// transaction holds the subscription's lock already.
    public func apply(_ event: SubscriptionEvent, now: Date, on connection: PostgresConnection, lockHeld: Bool = false)
        async throws -> Lifecycle.Decision
    {
        let originalTransactionId = event.transaction.originalTransactionId
        let current = try await subscriptions.lockedSubscription(originalTransactionId, on: connection, lockHeld: lockHeld)
        var decision = Lifecycle.apply(event, to: current, now: now)
        if decision.outcome == .outOfOrder {
            var events = try await history.events(of: originalTransactionId, on: connection)
            if !events.contains(where: { $0.id == event.id }) { events.append(event) }
            decision = Lifecycle.replay(events, now: now)
            decision.outcome = .outOfOrder
            try await archive.forget(originalTransactionId, on: connection)
        }
        // Ownership is decided by claims when they happen (see SubscriptionClaims), not by replaying history.
        if let owner = current?.accountId { decision.state?.accountId = owner }
        if let state = decision.state {
            if state != current { try await subscriptions.save(state, on: connection) }
            try await record(decision.effects, state: state, now: now, on: connection)
        }
        return decision
    }

    /// Rebuilds a subscription from its stored events, as if every event had arrived in order, and returns it
    /// beside the stored state; `write` saves the rebuilt state and archive over the stored ones.
    public func replay(_ originalTransactionId: String, now: Date, write: Bool, on connection: PostgresConnection)
        async throws -> (stored: SubscriptionState?, rebuilt: SubscriptionState?)
    {
        let stored = try await subscriptions.lockedSubscription(originalTransactionId, on: connection)
        var decision = Lifecycle.replay(try await history.events(of: originalTransactionId, on: connection), now: now)
        if let owner = stored?.accountId { decision.state?.accountId = owner }
        if write, let state = decision.state {
            try await subscriptions.save(state, on: connection)
            try await archive.forget(originalTransactionId, on: connection)
            try await record(decision.effects, state: state, now: now, on: connection)
        }
        return (stored, decision.state)
    }

    private func record(_ effects: [LifecycleEffect], state: SubscriptionState, now: Date, on connection: PostgresConnection)
        async throws
    {
        try await archive.record(effects, state: state, on: connection)
        try await credits.record(effects, state: state, now: now, on: connection)
        try await rechecks?.schedule(for: state, effects: effects, on: connection)
    }
}
