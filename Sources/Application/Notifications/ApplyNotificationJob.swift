import Analytics
import AppStoreModels
import Events
import Foundation
import Jobs
import Logging
import Persistence
import PostgresNIO
import Subscriptions

/// Applies one stored notification to its subscription through ``SubscriptionWriter`` (lock, lifecycle rules, replay
/// when it arrived out of order, save, archive), then records the outcome, stores the change's events and completes the
/// job — all in one transaction, which the applies of one claim share, up to ``jobsPerTransaction`` of them
/// (``TransactionalJobHandler``), the last three in one statement for all of them.
/// A consumable of the catalogue (ONE_TIME_CHARGE, or its REFUND) credits — or takes back — the top-up of the account
/// in its `appAccountToken`; a lifetime or non-renewing product entitles that account (``OneTimePurchases``). A
/// CONSUMPTION_REQUEST opens a refund request (``RefundDefence``).
/// A RESCIND_CONSENT is recorded and linked to its account (``ConsentRescissions``). Other notifications
/// (TEST, summaries, types Apple adds later, …) are recorded and complete without error; authentic content outside
/// ``ContentLimits`` is recorded as `rejected_content` with its reason and changes nothing.
public struct ApplyNotificationJob: TransactionalJobHandler {
    public let kind = NotificationInbox.applyJobKind
    /// Database work only: an attempt stuck on a connection the database dropped is given up quickly.
    public let timeout: Duration = .seconds(30)
    /// `STOREKEEPER_APPLIES_PER_TRANSACTION`; 1 gives every apply its own transaction.
    public let jobsPerTransaction: Int
    private let client: PostgresClient
    private let notifications: NotificationStore
    /// The writer's: the tokens looked up with the notification are remembered where the writer asks.
    private let purchaseIntents: PurchaseIntents
    private let writer: SubscriptionWriter
    private let appStore: AppStoreSubscriptions
    private let clock: @Sendable () -> Date
    private let logger: Logger

    private let credits: CreditLedger
    private let refunds: RefundDefence?
    private let purchases: OneTimePurchases?

    public init(
        client: PostgresClient, writer: SubscriptionWriter, credits: CreditLedger, refunds: RefundDefence?,
        purchases: OneTimePurchases? = nil, jobsPerTransaction: Int = 1, clock: @escaping @Sendable () -> Date = { Date() }, logger: Logger
    ) {
        self.purchases = purchases
        self.jobsPerTransaction = jobsPerTransaction
        self.refunds = refunds
        self.client = client
        self.notifications = NotificationStore(logger: logger)
        self.purchaseIntents = writer.purchaseIntents
        self.writer = writer
        self.appStore = AppStoreSubscriptions(writer: writer, client: client, logger: logger)
        self.credits = credits
        self.clock = clock
        self.logger = logger
    }

    public func run(_ execution: JobExecution) async throws {
        try await client.withFencedTransaction(logger: logger) { connection in try await run(execution, on: connection) }
    }

    public func run(_ execution: JobExecution, on connection: PostgresConnection) async throws {
        try await run([execution], on: connection)
    }

    /// The applies of a shared transaction: their notifications read, and their subscriptions locked, in one round
    /// trip, then each applied in turn, then how each went recorded, their events stored and their jobs completed in
    /// one more (the transaction's last write). The jobs of one claim have distinct subscriptions, but two may share
    /// an account: each apply reads what those before it wrote, and their events are stored in the applies' order.
    public func run(_ executions: [JobExecution], on connection: PostgresConnection) async throws {
        let arguments = try executions.map { try $0.job.decodeArguments(as: NotificationInbox.ApplyArguments.self) }
        let reads = try await notifications.notificationsLockingSubscriptions(
            arguments.map { NotificationStore.Wanted(uuid: $0.notificationUUID, tokens: $0.accountTokens ?? []) }, in: purchaseIntents,
            on: connection)
        var endings: [Ending] = []
        // One instant for the transaction's applies, as the database's now() is (read before the first apply's locks:
        // a later apply waiting on one is dated by it all the same). Their deferred posts then go in one round trip, at
        // one instant. Applying alone posts as it goes: a deferred row found posted already rolls the shared
        // transaction back, and each apply then runs alone.
        let now = clock()
        var posts: CreditLedger.DeferredPosts? = executions.count > 1 ? CreditLedger.DeferredPosts() : nil
        for (argument, read) in zip(arguments, reads) {
            // Events keep the applies' order (their `sequence`, which the feed and the webhooks follow): an apply that
            // may store events at once finds those of the applies before it stored.
            if let recorder = writer.recorder, Self.mayStoreEventsAtOnce(read) {
                let earlier = endings.indices.filter { endings[$0].events != nil }
                if !earlier.isEmpty {
                    _ = try await recorder.record(earlier.compactMap { endings[$0].events }, markingProcessed: [], on: connection)
                    for index in earlier { endings[index].events = nil }
                }
            }
            if Self.mayDeferPosts(read) {
                endings.append(try await apply(argument.notificationUUID, read: read, now: now, deferring: &posts, on: connection))
            } else {
                // Any other apply may read or write any account's ledger, or store its events at once: what waits is
                // posted first, and its own posts are not left waiting.
                try await credits.flush(&posts, on: connection)
                var alone: CreditLedger.DeferredPosts?
                endings.append(try await apply(argument.notificationUUID, read: read, now: now, deferring: &alone, on: connection))
            }
        }
        try await credits.flush(&posts, on: connection)
        try await JobExecution.complete(executions) { jobs in
            let processed = zip(endings, jobs).map { ending, job in
                NotificationStore.Processed(ending.uuid, outcome: ending.outcome, reason: ending.reason, jobID: job.id, attempt: job.attempt)
            }
            if let recorder = writer.recorder {
                return try await recorder.record(endings.compactMap(\.events), markingProcessed: processed, on: connection)
            }
            return try await notifications.markProcessed(processed, on: connection)
        }
        for ending in endings {
            logger.debug(
                "notification processed",
                metadata: [
                    "notification.uuid": "\(ending.uuid)", "notification.outcome": "\(ending.outcome.rawValue)",
                    "subscription.id": "\(ending.subscription ?? "-")",
                ])
        }
    }

    /// Whether applying `read` may store events at once instead of leaving them to the transaction's last write: a
    /// one-time purchase's and a top-up's (``OneTimePurchases``, ``TopUpPurchase``), a consumption request's
    /// (``RefundDefence``) — every notification with a transaction but an auto-renewable one's (a ``SubscriptionEvent``)
    /// that asks no refund.
    private static func mayStoreEventsAtOnce(_ read: NotificationStore.LockedRead?) -> Bool {
        // Without a transaction (a TEST, a summary, a RESCIND_CONSENT) nothing is stored at once.
        guard case .verified(let notification)? = read?.notification, let transaction = notification.transaction else { return false }
        return !transaction.isAutoRenewable || NotificationType(notification.payload.notificationType) == .consumptionRequest
    }

    /// Whether applying `read` may leave its credit posts to a later round trip: a subscription's notification that
    /// stores its events with the transaction's last write (``SubscriptionWriter``, which flushes what it reads).
    private static func mayDeferPosts(_ read: NotificationStore.LockedRead?) -> Bool {
        guard case .verified(let notification)? = read?.notification, SubscriptionEvent(notification) != nil else { return false }
        return !mayStoreEventsAtOnce(read)
    }

    /// What an apply leaves to its transaction's last write: how it processed its notification, and the events of its
    /// change ready to store.
    private struct Ending {
        var uuid: UUID
        var outcome: NotificationStore.ApplyOutcome
        var reason: String?
        var events: EventRecorder.Ready?
        var subscription: String?
    }

    private func apply(
        _ uuid: UUID, read: NotificationStore.LockedRead?, now: Date, deferring posts: inout CreditLedger.DeferredPosts?,
        on connection: PostgresConnection
    ) async throws -> Ending {
        guard let (stored, lockedSubscription, history) = read else {
            throw JobFailure.discard("notification \(uuid) is not stored")
        }
        let notification: VerifiedNotification
        switch stored {
        case .verified(let verified):
            notification = verified
        case .rejectedContent(let reason):
            logger.notice(
                "notification content rejected", metadata: ["notification.uuid": "\(uuid)", "reason": "\(reason)"])
            return Ending(uuid: uuid, outcome: .rejectedContent, reason: reason, subscription: nil)
        }
        let outcome: NotificationStore.ApplyOutcome
        let cause = EventCause(notification)
        var account: AccountID?
        var events: EventRecorder.Pending?
        let subscriptionEvent = SubscriptionEvent(notification)
        if let event = subscriptionEvent {
            let id = event.transaction.originalTransactionId
            // The notification's read locked its subscription and read it with its events, unless the notification
            // names none (a consumption request may not).
            let read =
                if lockedSubscription == id, let history { history } else { try await appStore.lockAndRead(id, on: connection) }
            let change = try await appStore.apply(event, to: read, now: now, deferring: &posts, on: connection)
            outcome = change.outcome.kind == .applied ? .applied : .unchanged
            account = change.outcome.state?.accountId
            events = change.events
        } else if let transaction = notification.transaction, let purchases, purchases.sells(transaction.productId) {
            let intended = try await purchaseIntents.account(ofToken: transaction.appAccountToken, on: connection)
            account = try await purchases.record(
                transaction, notificationType: notification.payload.notificationType, signedDate: notification.payload.signedDate,
                account: intended, now: now, cause: cause, on: connection)
            outcome = account == nil ? .recorded : .applied
        } else if let transaction = notification.transaction {
            let intended = try await purchaseIntents.account(ofToken: transaction.appAccountToken, on: connection)
            account = try await credits.creditedAccount(ofTopUp: transaction.transactionId, on: connection) ?? intended
            let toppedUp = try await TopUpPurchase(ledger: credits, events: writer.recorder, logger: logger).record(
                transaction, account: intended, now: now, cause: cause, on: connection)
            outcome = toppedUp ? .toppedUp : .recorded
        } else if NotificationType(notification.payload.notificationType) == .rescindConsent,
            let appTransactionId = notification.appTransaction?.appTransactionId
        {
            // The customer withdrew consent for the app: recorded, linked to the account of the subscription with the
            // same app transaction (now, or when one first names it), and sent to that account.
            // Without an environment it links to nothing: a rescission never reaches an account of another environment.
            let environment = notification.payload.appData?.environment ?? .unknown
            let rescission = try await ConsentRescissions(logger: logger).record(
                notificationUUID: notification.payload.notificationUUID.lowercased(), appTransactionId: appTransactionId, environment: environment,
                rescindedAt: notification.payload.signedDate.map { Date(timeIntervalSince1970: Double($0) / 1000) } ?? now, now: now, on: connection)
            account = rescission.account
            if let draft = rescission.event { events = EventRecorder.Pending(drafts: [draft], statuses: [:], now: now) }
            outcome = rescission.account == nil ? .recorded : .applied
        } else {
            if let summary = notification.payload.summary, let request = summary.requestIdentifier {
                try await RenewalExtensionRecords.noteSummary(
                    request, succeededCount: summary.succeededCount, failedCount: summary.failedCount, at: now, on: connection, logger: logger)
            }
            outcome = .recorded
        }
        // A one-time sale's revenue, as the newest notification about it says (a refund, a reversal).
        if subscriptionEvent == nil, let transaction = notification.transaction, let sale = OneTimeSale(appStore: transaction),
            try await notifications.isNewest(
                signedDate: notification.payload.signedDate ?? 0, ofTransaction: transaction.originalTransactionId, on: connection)
        {
            try await writer.recordSale(sale, on: connection)
        }
        if let refunds { events = try await refunds.notice(notification, account: account, now: now, after: events, on: connection) }
        // The change's events are stored by the transaction's last write, which records the outcome and completes the job.
        var ready: EventRecorder.Ready?
        if let events, let recorder = writer.recorder, !events.drafts.isEmpty {
            // An account without a status is read: after its posts.
            try await credits.flush(&posts, touching: events.drafts.map(\.account).filter { events.statuses[$0] == nil }, on: connection)
            ready = try await recorder.ready(events, on: connection)
        }
        return Ending(uuid: uuid, outcome: outcome, events: ready, subscription: notification.originalTransactionId)
    }
}
