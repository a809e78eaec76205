import AppStoreModels
import AppStoreServerAPI
import Credits
import Foundation
import GooglePlayAPI
import Jobs
import Logging
import Persistence
import PostgresNIO
import Subscriptions

/// Sends the answer to one refund request once the app's window closed: the app's own answer if it gave one, else the
/// policy's from the credit ledger — only with the account's consent and before the store's deadline. Apple's
/// consumption request is answered with `sendConsumptionInformation`; Play's chargeback review with
/// `orders.reviewrefund`, carrying the share used and the spends themselves as usage events. A refused body is
/// recorded as `rejected`; rate limits and outages are retried with backoff until the deadline.
public struct ConsumptionAnswerJob: JobHandler {
    public let kind = RefundDefence.jobKind
    /// One API call with its own retries.
    public let timeout: Duration = .seconds(120)
    private let client: PostgresClient
    /// The store APIs answers go through; a request of a store not configured waits for its deadline.
    private let serverAPI: AppStoreServerClient?
    private let play: GooglePlayClient?
    private let credits: CreditLedger
    private let policy: RefundPolicy
    private let requests: RefundRequests
    private let clock: @Sendable () -> Date
    private let logger: Logger

    public init(
        client: PostgresClient, serverAPI: AppStoreServerClient?, play: GooglePlayClient? = nil, credits: CreditLedger, policy: RefundPolicy,
        clock: @escaping @Sendable () -> Date, logger: Logger
    ) {
        self.client = client
        self.serverAPI = serverAPI
        self.play = play
        self.credits = credits
        self.policy = policy
        self.requests = RefundRequests(logger: logger)
        self.clock = clock
        self.logger = logger
    }

    /// What the job decided before calling Apple.
    private enum Plan {
        case done
        case send(RefundRequests.Request, RefundAnswerDraft)
    }

    public func run(_ execution: JobExecution) async throws {
        let arguments = try execution.job.decodeArguments(as: RefundDefence.Arguments.self)
        let plan: Plan = try await client.withFencedTransaction(logger: logger) { connection in
            guard let request = try await requests.lockedRequest(arguments.requestId, on: connection), request.state == .pending else {
                try await execution.complete(on: connection)
                return .done
            }
            let now = clock()
            if now >= request.deadlineAt {
                try await close(
                    request, .missedDeadline, error: request.lastError ?? "the store's deadline passed", attempted: false, now: now, execution,
                    on: connection)
                return .done
            }
            guard try await requests.hasConsented(request.accountId, on: connection) else {
                try await close(request, .noConsent, error: nil, attempted: false, now: now, execution, on: connection)
                return .done
            }
            let usageLimit = request.store == .googlePlay ? RefundReview.maximumUsageEvents : nil
            return .send(
                request, try await RefundAnswerDraft.read(for: request, credits: credits, policy: policy, usageLimit: usageLimit, on: connection))
        }
        guard case .send(let request, let draft) = plan else { return }
        let answer = draft.answer
        let failure = await send(draft, for: request)
        let now = clock()
        try await client.withFencedTransaction(logger: logger) { connection in
            switch failure {
            case nil:
                try await close(request, .sent, sent: answer, error: nil, now: now, execution, on: connection)
            case let error? where error.isRetryable && now < request.deadlineAt:
                try await requests.record(
                    request.id, state: .pending, sent: nil, error: error.description, attempted: true, at: now, on: connection)
            case let error? where error.isRetryable:
                try await close(request, .missedDeadline, error: error.description, now: now, execution, on: connection)
            case let error?:
                try await close(request, .rejected, sent: answer, error: error.description, now: now, execution, on: connection)
            }
        }
        if let failure, failure.isRetryable, now < request.deadlineAt { throw failure }
    }

    /// A failure of either store's API, as the job treats it.
    struct SendFailure: Error, CustomStringConvertible {
        var description: String
        var isRetryable: Bool
    }

    private func send(_ draft: RefundAnswerDraft, for request: RefundRequests.Request) async -> SendFailure? {
        do {
            switch request.store {
            case .googlePlay:
                guard let play, let token = request.reviewToken else {
                    return SendFailure(description: "the Play Developer API is not configured", isRetryable: false)
                }
                try await play.reviewRefund(order: request.transactionId, Self.review(draft, token: token))
            default:
                guard let serverAPI else { return SendFailure(description: "the App Store Server API is not configured", isRetryable: false) }
                try await serverAPI.sendConsumptionInformation(
                    draft.answer, transactionId: request.transactionId, environment: request.environment)
            }
            return nil
        } catch let error as GooglePlayAPIError {
            return SendFailure(description: error.description, isRetryable: error.isRetryable)
        } catch let error as AppStoreServerError {
            return SendFailure(description: error.description, isRetryable: error.isRetryable)
        } catch {
            return SendFailure(description: "\(error)", isRetryable: true)
        }
    }

    /// The answer in Play's words: Apple's `GRANT_FULL` is `APPROVE`, `DECLINE` is `DECLINE`, a prorated grant (Play
    /// has none) `NEUTRAL`; the share used and the spends go with it, the account named as the app names it to Play.
    static func review(_ draft: RefundAnswerDraft, token: String) -> RefundReview {
        let answer = draft.answer
        let preference: String
        switch answer.refundPreference.flatMap(RefundPreference.init) {
        case .grantFull?: preference = "APPROVE"
        case .decline?: preference = "DECLINE"
        case .grantProrated?, nil: preference = "NEUTRAL"
        }
        let time = Date.ISO8601FormatStyle(includingFractionalSeconds: true)
        return RefundReview(
            pendingRefundToken: token, refundPreference: preference, sampleContentProvided: answer.sampleContentProvided,
            consumptionPercentageMilliunits: answer.consumptionPercentage ?? draft.milliPercent,
            consumptionUsageEvents: draft.usage.map {
                RefundReview.UsageEvent(
                    consumptionTime: $0.at.formatted(time), consumptionItemDescription: "\($0.amount) \($0.meter)", obfuscatedAccountId: nil)
            })
    }

    private func close(
        _ request: RefundRequests.Request, _ state: RefundRequests.State, sent: ConsumptionAnswer? = nil, error: String?,
        attempted: Bool = true, now: Date,
        _ execution: JobExecution, on connection: PostgresConnection
    ) async throws {
        try await requests.record(request.id, state: state, sent: sent, error: error, attempted: attempted, at: now, on: connection)
        try await execution.complete(on: connection)
        logger.info(
            "consumption request closed",
            metadata: [
                "refund.request": "\(request.id)", "refund.state": "\(state.rawValue)", "transaction.id": "\(request.transactionId)",
                "error": "\(error ?? "-")",
            ])
    }
}
