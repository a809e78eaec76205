import AppStoreModels
import Credits
import Entitlements
import Events
import Foundation
import Jobs
import Logging
import Persistence
import PostgresNIO
import Subscriptions

/// Answers Apple's consumption requests: a `CONSUMPTION_REQUEST` opens a request, tells the app
/// (`purchase.refund_requested`, with the instant it may answer by) and schedules ``ConsumptionAnswerJob``; the app
/// may record its own answer until then; Apple's `REFUND`/`REFUND_DECLINED` closes it with the decision. Nothing is
/// sent for an account without consent.
public struct RefundDefence: Sendable {
    /// Job kind of an answer.
    public static let jobKind = "consumption-answer"

    /// Arguments of an answer job.
    public struct Arguments: Codable, Sendable {
        public var requestId: UUID
    }

    /// What became of the app's own answer.
    public enum AppAnswerOutcome: Sendable {
        case recorded(RefundRequests.Request)
        case unknownRequest
        /// The request was answered already (or will never be): too late to change.
        case closed(RefundRequests.Request)
        /// The answer breaks Apple's rules for the purchase.
        case invalid([String])
    }

    let client: PostgresClient
    let policy: RefundPolicy
    /// Whether the App Store Server API is configured: without it requests are recorded but never answered.
    let answering: Bool
    let queue: any JobScheduling
    let events: EventRecorder?
    let requests: RefundRequests
    let logger: Logger

    public init(
        client: PostgresClient, policy: RefundPolicy, answering: Bool, queue: any JobScheduling, events: EventRecorder?, logger: Logger
    ) {
        self.client = client
        self.policy = policy
        self.answering = answering
        self.queue = queue
        self.events = events
        self.requests = RefundRequests(logger: logger)
        self.logger = logger
    }

    /// What an applied notification means for refund requests, in its transaction: a `CONSUMPTION_REQUEST` about a
    /// purchase of `account` opens one; `REFUND` and `REFUND_DECLINED` record Apple's decision. `pending`: the apply's
    /// own events, not stored yet; they come before any event the notice stores, so it stores them first and returns
    /// `nil`, or returns them for the apply to store with its last write.
    func notice(
        _ notification: VerifiedNotification, account: AccountID?, now: Date, after pending: EventRecorder.Pending? = nil,
        on connection: PostgresConnection
    ) async throws -> EventRecorder.Pending? {
        guard let transaction = notification.transaction else { return pending }
        switch NotificationType(notification.payload.notificationType) {
        case .consumptionRequest:
            guard let account, let id = UUID(text: notification.payload.notificationUUID) else { return pending }
            var pending = pending
            if let stored = pending, let events {
                try await events.record(stored, on: connection)
                pending = nil
            }
            try await open(id, notification: notification, transaction: transaction, account: account, now: now, on: connection)
            return pending
        case .refund, .refundDeclined:
            let signed = notification.payload.signedDate.map { Date(timeIntervalSince1970: Double($0) / 1000) } ?? now
            try await requests.recordOutcome(
                transactionId: transaction.transactionId, outcome: notification.payload.notificationType, at: signed, on: connection)
            return pending
        default:
            return pending
        }
    }

    private func open(
        _ id: UUID, notification: VerifiedNotification, transaction: TransactionPayload, account: AccountID, now: Date,
        on connection: PostgresConnection
    ) async throws {
        let requestedAt = notification.payload.signedDate.map { Date(timeIntervalSince1970: Double($0) / 1000) } ?? now
        let environment = transaction.environment ?? .unknown
        let request = RefundRequests.Request(
            id: id, accountId: account, transactionId: transaction.transactionId, originalTransactionId: transaction.originalTransactionId,
            productId: transaction.productId, billingPeriod: transaction.webOrderLineItemId ?? transaction.transactionId,
            purchase: transaction.isAutoRenewable ? .subscription : .consumable,
            environment: environment, reason: notification.payload.data?.consumptionRequestReason,
            requestedAt: requestedAt, answerAt: policy.answerAt(requestedAt: requestedAt),
            deadlineAt: requestedAt.addingTimeInterval(RefundPolicy.appleDeadline), state: answering ? .pending : .notConfigured)
        guard try await requests.open(request, on: connection) else { return }
        if answering {
            let job = try NewJob(
                kind: Self.jobKind, arguments: Arguments(requestId: id), runAt: request.answerAt,
                uniqueKey: "consumption-answer:\(id.lowercasedText)")
            try await queue.enqueue(job, on: connection)
        }
        try await events?.record(
            [
                CreditChanges.refundRequested(
                    requestId: id, transactionId: transaction.transactionId, productId: transaction.productId, reason: request.reason,
                    account: account, subscription: transaction.isAutoRenewable ? transaction.originalTransactionId : nil,
                    environment: environment, answerBy: request.answerAt, deadline: request.deadlineAt, cause: EventCause(notification))
            ], now: now, on: connection)
        logger.info(
            "refund requested",
            metadata: ["refund.request": "\(id)", "transaction.id": "\(transaction.transactionId)", "account.id": "\(account.text)"])
    }

    /// Records the app's own answer to a pending request.
    public func recordAppAnswer(_ answer: ConsumptionAnswer, request id: UUID) async throws -> AppAnswerOutcome {
        try await client.withFencedTransaction(logger: logger) { connection in
            guard let request = try await requests.lockedRequest(id, on: connection) else { return .unknownRequest }
            let problems = answer.problems(for: request.purchase)
            guard problems.isEmpty else { return .invalid(problems) }
            guard let recorded = try await requests.recordAppAnswer(id, answer, on: connection) else { return .closed(request) }
            return .recorded(recorded)
        }
    }

    /// Records whether `account` consents to its consumption data being sent to Apple.
    public func recordConsent(_ account: AccountID, consented: Bool, now: Date) async throws {
        try await client.withFencedConnection { connection in
            try await requests.recordConsent(account, consented: consented, at: now, on: connection)
        }
    }
}
