import Events
import Foundation
import Logging
import Persistence
import PostgresNIO
import Subscriptions

/// The App Store's subscriptions, each derived again from every fact stored of it (``Lifecycle/derive(_:purchaseIntents:)``)
/// under its lock, and saved through ``SubscriptionWriter``. Its use cases: apply one notification's event, derive a
/// subscription again (a credit window's start, a recheck, `replay`), and preview what that would change.
public struct AppStoreSubscriptions: Sendable {
    private let writer: SubscriptionWriter
    private let subscriptions: SubscriptionStore
    private let history: SubscriptionHistory
    private let logger: Logger

    public init(writer: SubscriptionWriter, client: PostgresClient, logger: Logger) {
        self.writer = writer
        self.logger = logger
        self.subscriptions = SubscriptionStore(client: client, logger: logger)
        self.history = SubscriptionHistory(logger: logger)
    }

    /// Locks the subscription for the rest of the caller's transaction, then reads it with its stored events.
    public func lockAndRead(_ originalTransactionId: String, on connection: PostgresConnection) async throws -> SubscriptionHistory.Read {
        try await subscriptions.lock(originalTransactionId, on: connection)
        return try await read(originalTransactionId, on: connection)
    }

    /// The subscription and its stored events, read under the lock the caller's transaction holds.
    public func read(_ originalTransactionId: String, on connection: PostgresConnection) async throws -> SubscriptionHistory.Read {
        try await history.subscriptionAndEvents(of: originalTransactionId, on: connection)
    }

    /// Saves what `event` (stored already, or added when it is not) changes of the subscription `read` holds — read
    /// under the lock the caller's transaction holds — and returns the change's events for the caller's last write.
    /// With `posts`, the credit posts may be left to the caller's flush
    /// (``SubscriptionWriter/change(_:stored:cause:anyRevocation:now:deferring:on:)``).
    public func apply(
        _ event: SubscriptionEvent, to read: SubscriptionHistory.Read, now: Date, deferring posts: inout CreditLedger.DeferredPosts?,
        on connection: PostgresConnection
    ) async throws -> SubscriptionWriter.Change {
        guard let derived = try await derivation(of: read, adding: event, on: connection) else { return Self.unchanged(read) }
        return try await writer.change(
            derived.derivation, stored: read.subscription, cause: EventCause(event), anyRevocation: derived.anyRevocation, now: now,
            deferring: &posts, on: connection)
    }

    /// Applies `event`: locks its subscription, reads it, saves the change and stores its events.
    public func apply(_ event: SubscriptionEvent, now: Date, on connection: PostgresConnection) async throws -> SubscriptionWriter.Outcome {
        let read = try await lockAndRead(event.transaction.originalTransactionId, on: connection)
        var alone: CreditLedger.DeferredPosts?
        return try await store(apply(event, to: read, now: now, deferring: &alone, on: connection), on: connection)
    }

    /// Derives the subscription again from its stored facts, saves it and stores the change's events.
    public func rederive(_ originalTransactionId: String, now: Date, on connection: PostgresConnection) async throws -> SubscriptionWriter.Outcome {
        let read = try await lockAndRead(originalTransactionId, on: connection)
        guard let derived = try await derivation(of: read, adding: nil, on: connection) else { return Self.unchanged(read).outcome }
        return try await writer.save(
            derived.derivation, stored: read.subscription, cause: EventCause(originalTransactionId: originalTransactionId),
            anyRevocation: derived.anyRevocation, now: now, on: connection)
    }

    /// What deriving the subscription again would change; nothing is written.
    public func preview(_ originalTransactionId: String, now: Date, on connection: PostgresConnection) async throws -> SubscriptionWriter.Outcome {
        let read = try await lockAndRead(originalTransactionId, on: connection)
        guard let derived = try await derivation(of: read, adding: nil, on: connection) else { return Self.unchanged(read).outcome }
        return try await writer.preview(derived.derivation, stored: read.subscription, now: now, on: connection)
    }

    /// Files every transaction id the subscription's stored facts name for the support search (``AccountSearch``),
    /// as the writer does when a new period comes in force; ids filed before stay as they are. Writes nothing else.
    public func fileTransactions(of originalTransactionId: String, on connection: PostgresConnection) async throws {
        let read = try await read(originalTransactionId, on: connection)
        guard let derived = try await derivation(of: read, adding: nil, on: connection) else { return }
        try await AccountSearch.file(
            transactions: derived.derivation.transactionIds, ofSubscription: originalTransactionId, on: connection, logger: logger)
    }

    /// The subscription `read` holds, derived from its stored events and `extra`, with the accounts its tokens name;
    /// `nil` when the facts say nothing yet.
    private func derivation(of read: SubscriptionHistory.Read, adding extra: SubscriptionEvent?, on connection: PostgresConnection) async throws
        -> (derivation: Lifecycle.Derivation, anyRevocation: Bool)?
    {
        var events = read.events
        if let extra, !events.contains(where: { $0.id == extra.id }) { events.append(extra) }
        guard let facts = SubscriptionFacts(events: events) else { return nil }
        let tokens = facts.accountTokens.values.map(\.value) + [facts.renewalInfo?.value.appAccountToken].compactMap { $0 }
        let intents = try await writer.purchaseIntents.accounts(ofTokens: tokens, on: connection)
        guard let derivation = Lifecycle.derive(facts, purchaseIntents: intents) else { return nil }
        return (derivation, events.contains(where: \.mentionsRevocation))
    }

    /// Stores the events of `change` (made by ``apply(_:to:now:deferring:on:)``) and returns its outcome.
    public func store(_ change: SubscriptionWriter.Change, on connection: PostgresConnection) async throws -> SubscriptionWriter.Outcome {
        try await writer.store(change, on: connection)
    }

    private static func unchanged(_ read: SubscriptionHistory.Read) -> SubscriptionWriter.Change {
        SubscriptionWriter.Change(
            outcome: .init(kind: .unchanged, state: read.subscription, stored: read.subscription, operations: []), events: nil)
    }
}
