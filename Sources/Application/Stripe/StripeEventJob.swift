import Events
import Foundation
import Jobs
import Logging
import Persistence
import PostgresNIO
import StripeAPI
import StripeStore

/// Processes a stored Stripe event: the event only says which object changed, so the job reads that object from
/// Stripe, finds the subscription it concerns and brings it up to date (``StripeSubscriptions``) — in any order, any
/// number of times. Types Storekeeper does not act on are acknowledged. The outcome is recorded on the event.
public struct StripeEventJob: JobHandler {
    public let kind = StripeInbox.jobKind
    /// Stripe calls with their retries, then the database work.
    public let timeout: Duration = .seconds(120)
    private let client: PostgresClient
    private let events: StripeEventStore
    private let objects: StripeObjectStore
    private let stripe: StripeClient?
    private let subscriptions: StripeSubscriptions
    private let payments: StripePayments?
    private let logger: Logger

    public init(
        client: PostgresClient, stripe: StripeClient?, subscriptions: StripeSubscriptions, payments: StripePayments?, logger: Logger
    ) {
        self.payments = payments
        self.client = client
        self.events = StripeEventStore(logger: logger)
        self.objects = StripeObjectStore(logger: logger)
        self.stripe = stripe
        self.subscriptions = subscriptions
        self.logger = logger
    }

    /// What processing an event came to (recorded in `stripe_events.outcome`).
    enum Outcome: String {
        case applied, unchanged
        /// A type Storekeeper does not act on.
        case acknowledged
        /// The subscription names no account yet: it waits for a link.
        case waitingForAccount = "waiting_for_account"
        /// The object concerns no subscription (a charge of something else).
        case noSubscription = "no_subscription"
        /// Stripe does not know the object (deleted, or another account's).
        case notFound = "not_found"
        /// No API key is configured: stored to process again later.
        case recorded
    }

    public func run(_ execution: JobExecution) async throws {
        let arguments = try execution.job.decodeArguments(as: StripeInbox.JobArguments.self)
        guard let event = try await client.withFencedConnection({ try await events.event(arguments.eventId, on: $0) }) else {
            throw JobFailure.discard("Stripe event \(arguments.eventId) is not stored")
        }
        let cause = EventCause(eventId: event.id, notificationType: event.type, signedDate: event.createdAt)
        guard let stripe, let objectId = event.objectId else { return try await finish(event.id, .recorded, execution) }
        do {
            switch StripeEventKind(type: event.type) {
            case .checkoutCompleted:
                let session = try await stripe.checkoutSession(objectId)
                let read = try StripeObjectStore.Read(session, id: session.id, object: "checkout.session", subscriptionId: session.subscription)
                if session.mode == "payment", let intent = session.paymentIntent, let payments {
                    return try await pay(intent, also: [read], event: event.id, cause: cause, payments, execution)
                }
                guard session.mode == "subscription", let subscription = session.subscription else {
                    return try await finish(event.id, .acknowledged, execution)
                }
                try await refresh(subscription, also: [read], event: event.id, cause: cause, execution)
            case .subscriptionChanged:
                try await refresh(objectId, event: event.id, cause: cause, execution)
            case .invoiceChanged:
                // The subscription's invoices are read with it: the invoice itself only when the event did not say whose.
                if let subscription = event.subscriptionId { return try await refresh(subscription, event: event.id, cause: cause, execution) }
                let invoice = try await stripe.invoice(objectId)
                guard let subscription = invoice.subscription else { return try await finish(event.id, .noSubscription, execution) }
                try await refresh(
                    subscription, also: [try .init(invoice, id: invoice.id, object: "invoice", subscriptionId: subscription)], event: event.id,
                    cause: cause, execution)
            case .chargeRefunded:
                let charge = try await stripe.charge(objectId)
                guard let subscription = try await subscription(paidBy: charge, stripe: stripe) else {
                    return try await payment(of: charge, also: [], event: event.id, cause: cause, execution)
                }
                try await refresh(
                    subscription, also: [try .init(charge, id: charge.id, object: "charge", subscriptionId: subscription)], event: event.id,
                    cause: cause, execution)
            case .disputeChanged:
                let dispute = try await stripe.dispute(objectId)
                let charge = try await stripe.charge(dispute.charge)
                guard let subscription = try await subscription(paidBy: charge, stripe: stripe) else {
                    let read = try StripeObjectStore.Read(dispute, id: dispute.id, object: "dispute", subscriptionId: nil)
                    return try await payment(of: charge, also: [read], event: event.id, cause: cause, execution)
                }
                let reads: [StripeObjectStore.Read] = [
                    try .init(charge, id: charge.id, object: "charge", subscriptionId: subscription),
                    try .init(dispute, id: dispute.id, object: "dispute", subscriptionId: subscription),
                ]
                try await refresh(subscription, also: reads, event: event.id, cause: cause, execution)
            case .other:
                try await finish(event.id, .acknowledged, execution)
            }
        } catch let error as StripeAPIError where error.kind == .notFound {
            try await finish(event.id, .notFound, execution)
        }
    }

    /// The subscription a charge paid for: as filed before, else through the invoice its PaymentIntent paid.
    private func subscription(paidBy charge: StripeCharge, stripe: StripeClient) async throws -> String? {
        if let filed = try await client.withFencedConnection({ try await objects.subscription(ofObject: charge.id, on: $0) }) { return filed }
        guard let intent = charge.paymentIntent else { return nil }
        for invoiceId in try await stripe.invoiceIds(paidBy: intent) {
            if let subscription = try await stripe.invoice(invoiceId).subscription { return subscription }
        }
        return nil
    }

    /// A charge of no subscription: a one-time payment's, when its session is held; otherwise nothing of Storekeeper's.
    private func payment(
        of charge: StripeCharge, also: [StripeObjectStore.Read], event: String, cause: EventCause, _ execution: JobExecution
    ) async throws {
        guard let payments, let intent = charge.paymentIntent, try await payments.holds(intent) else {
            return try await finish(event, .noSubscription, execution)
        }
        try await pay(intent, also: also, event: event, cause: cause, payments, execution)
    }

    private func pay(
        _ intent: String, also: [StripeObjectStore.Read], event: String, cause: EventCause, _ payments: StripePayments, _ execution: JobExecution
    ) async throws {
        try await payments.refresh(intent, also: also, cause: cause) { account, connection in
            try await events.markProcessed(event, outcome: (account == nil ? Outcome.waitingForAccount : .applied).rawValue, on: connection)
            try await execution.complete(on: connection)
        }
    }

    private func refresh(
        _ subscription: String, also: [StripeObjectStore.Read] = [], event: String, cause: EventCause, _ execution: JobExecution
    ) async throws {
        try await subscriptions.refresh(subscription, also: also, cause: cause) { outcome, connection in
            let result: Outcome
            if let state = outcome?.state {
                result = state.accountId == nil ? .waitingForAccount : outcome?.kind == .applied ? .applied : .unchanged
            } else {
                result = .notFound
            }
            try await events.markProcessed(event, outcome: result.rawValue, on: connection)
            try await execution.complete(on: connection)
        }
    }

    private func finish(_ event: String, _ outcome: Outcome, _ execution: JobExecution) async throws {
        try await client.withFencedTransaction(logger: logger) { connection in
            try await events.markProcessed(event, outcome: outcome.rawValue, on: connection)
            try await execution.complete(on: connection)
        }
    }
}
