import Events
import Foundation
import Logging
import Persistence
import PostgresNIO
import StripeAPI
import StripeStore
import Subscriptions

/// The one code path that brings a Stripe subscription up to date: read it and its invoices from Stripe again, file
/// them with whatever else was read of it (charges, disputes, checkout sessions), and derive it from the whole set
/// (``StripeDerivation``) through the same writer as the App Store's subscriptions — credits, events, next window.
/// Reads happen outside any transaction; each object keeps its newest read, so concurrent refreshes cannot go back.
public struct StripeSubscriptions: Sendable {
    let client: PostgresClient
    let stripe: StripeClient?
    let objects: StripeObjectStore
    let subscriptions: SubscriptionStore
    let writer: SubscriptionWriter
    let settings: StripeDerivation.Settings
    let clock: @Sendable () -> Date
    let logger: Logger

    /// - Parameter stripe: `nil` when no API key is configured: subscriptions are derived from what is held only.
    public init(
        client: PostgresClient, stripe: StripeClient?, writer: SubscriptionWriter, settings: StripeDerivation.Settings,
        clock: @escaping @Sendable () -> Date, logger: Logger
    ) {
        self.client = client
        self.stripe = stripe
        self.objects = StripeObjectStore(logger: logger)
        self.subscriptions = SubscriptionStore(client: client, logger: logger)
        self.writer = writer
        self.settings = settings
        self.clock = clock
        self.logger = logger
    }

    /// Reads the subscription and its invoices from Stripe, files them with `also` (objects the caller read that
    /// concern it), and derives it. A subscription Stripe does not know is left as held.
    /// `finishing` runs last in the same transaction (a job completes there).
    @discardableResult
    public func refresh(
        _ id: String, also: [StripeObjectStore.Read] = [], cause: EventCause,
        finishing: @escaping @Sendable (SubscriptionWriter.Outcome?, PostgresConnection) async throws -> Void = { _, _ in }
    ) async throws -> SubscriptionWriter.Outcome? {
        guard let stripe else { throw StripeAPIError(.refused, "STOREKEEPER_STRIPE_API_KEY is not set: Stripe cannot be read") }
        var reads = also
        do {
            let subscription = try await stripe.subscription(id)
            reads.append(try .init(subscription, id: subscription.id, object: "subscription", subscriptionId: subscription.id))
            for invoice in try await stripe.invoices(ofSubscription: id) {
                reads.append(try .init(invoice, id: invoice.id, object: "invoice", subscriptionId: id))
            }
        } catch let error as StripeAPIError where error.kind == .notFound {
            logger.notice("Stripe does not know the subscription", metadata: ["stripe.subscription": "\(id)"])
        }
        let readAt = Date()
        let held = reads
        return try await client.withFencedTransaction(logger: logger) { connection in
            // The subscription's lock before its objects' rows: refreshes of one subscription never deadlock.
            try await subscriptions.lock(id, on: connection)
            try await objects.save(held, readAt: readAt, on: connection)
            let outcome = try await derive(id, cause: cause, lockHeld: true, on: connection)
            try await finishing(outcome, connection)
            return outcome
        }
    }

    /// Derives a subscription again from what is held of it (no Stripe call): the credit window reset, a link, a
    /// replay (`write: false` writes nothing and says what would change).
    @discardableResult
    public func derive(
        _ id: String, cause: EventCause, lockHeld: Bool = false, write: Bool = true, on connection: PostgresConnection
    ) async throws -> SubscriptionWriter.Outcome? {
        let stored = try await subscriptions.lockedSubscription(id, on: connection, lockHeld: lockHeld)
        let held = try await objects.held(ofSubscription: id, on: connection)
        guard let subscription = held.subscription else { return nil }
        let (account, conflicts) = StripeAccountClaim.resolve(
            checkoutReferences: held.checkoutSessions.compactMap(\.clientReferenceId), metadata: subscription.accountMetadata,
            linked: held.linkedAccount)
        if !conflicts.isEmpty {
            logger.warning(
                "a Stripe subscription names several accounts; the first is kept",
                metadata: ["stripe.subscription": "\(id)", "account": "\(account?.text ?? "-")", "conflicts": "\(conflicts)"])
        }
        let facts = StripeSubscriptionFacts(
            subscription: subscription, invoices: held.invoices, charges: held.charges, disputes: held.disputes, account: account)
        let derivation = StripeDerivation.derive(facts, settings: settings)
        return
            if write
        {
            try await writer.save(derivation, stored: stored, cause: cause, now: clock(), on: connection)
        } else {
            try await writer.preview(derivation, stored: stored, now: clock(), on: connection)
        }
    }

    /// What a catch-up found.
    public struct SyncReport: Sendable, Equatable {
        public var found = 0
        public var applied = 0
        public var unchanged = 0
        public var waiting = 0
    }

    /// Pages every subscription Stripe holds (created since `createdSince`, Unix seconds, when given) and brings each up
    /// to date: a missed webhook, or a first import of existing web customers. `page` hears each page's number and size.
    public func sync(createdSince: Int64?, page: @Sendable (Int, Int) -> Void = { _, _ in }) async throws -> SyncReport {
        guard let stripe else { throw StripeAPIError(.refused, "STOREKEEPER_STRIPE_API_KEY is not set: Stripe cannot be read") }
        var report = SyncReport()
        var after: String?
        var number = 0
        repeat {
            let listed = try await stripe.subscriptions(startingAfter: after, createdSince: createdSince)
            number += 1
            page(number, listed.data.count)
            for subscription in listed.data {
                report.found += 1
                let outcome = try await refresh(
                    subscription.id, cause: EventCause(notificationType: "stripe.sync", originalTransactionId: subscription.id))
                if outcome?.state?.accountId == nil {
                    report.waiting += 1
                } else if outcome?.kind == .applied {
                    report.applied += 1
                } else {
                    report.unchanged += 1
                }
            }
            after = listed.hasMore ? listed.data.last?.id : nil
        } while after != nil
        return report
    }

    /// Why a link is refused.
    public enum LinkRefusal: Error, Sendable {
        /// The subscription's checkout or metadata names another account, which comes first, or another account's link
        /// holds it: the link would not hold, or would take it from its holder.
        case belongsToAnotherAccount
    }

    /// Links a subscription an app created itself to `account` and derives it: reads it from Stripe when it is not
    /// held yet.
    public func link(_ id: String, to account: AccountID) async throws -> SubscriptionWriter.Outcome? {
        // A subscription Stripe does not know is refused before anything is stored (``StripeAPIError/Kind/notFound``).
        if let stripe { _ = try await stripe.subscription(id) }
        let link = try await client.withFencedTransaction(logger: logger) { connection in
            try await objects.link(id, to: account, on: connection)
        }
        // Another account holds it: moving it would take a paying customer's access away on the word of whoever
        // knows the id (made outside checkout or not). Support can unlink it by hand.
        if case .heldBy = link { throw LinkRefusal.belongsToAnotherAccount }
        let cause = EventCause(notificationType: "stripe.link", originalTransactionId: id)
        let outcome: SubscriptionWriter.Outcome?
        if stripe != nil {
            outcome = try await refresh(id, cause: cause)
        } else {
            outcome = try await client.withFencedTransaction(logger: logger) { connection in try await derive(id, cause: cause, on: connection) }
        }
        if let owner = outcome?.state?.accountId, owner != account {
            // Checkout or metadata name the owner, before any link: the link just added is taken back.
            if link == .added {
                try await client.withFencedTransaction(logger: logger) { connection in try await objects.unlink(id, on: connection) }
            }
            throw LinkRefusal.belongsToAnotherAccount
        }
        return outcome
    }
}
