import AppStoreModels
import AppStoreServerAPI
import Credits
import Foundation
import Jobs
import Logging
import Persistence
import PostgresNIO

/// Sends the answer to one consumption request once the app's window closed: the app's own answer if it gave one,
/// else the policy's from the credit ledger — only with the account's consent and before Apple's deadline. A refused
/// body is recorded as `rejected`; rate limits and outages are retried with backoff until the deadline.
public struct ConsumptionAnswerJob: JobHandler {
    public let kind = RefundDefence.jobKind
    /// One API call with its own retries.
    public let timeout: Duration = .seconds(120)
    private let client: PostgresClient
    private let serverAPI: AppStoreServerClient
    private let credits: CreditLedger
    private let policy: RefundPolicy
    private let requests: RefundRequests
    private let clock: @Sendable () -> Date
    private let logger: Logger

    public init(
        client: PostgresClient, serverAPI: AppStoreServerClient, credits: CreditLedger, policy: RefundPolicy,
        clock: @escaping @Sendable () -> Date, logger: Logger
    ) {
        self.client = client
        self.serverAPI = serverAPI
        self.credits = credits
        self.policy = policy
        self.requests = RefundRequests(logger: logger)
        self.clock = clock
        self.logger = logger
    }

    /// What the job decided before calling Apple.
    private enum Plan {
        case done
        case send(RefundRequests.Request, ConsumptionAnswer)
    }

    public func run(_ execution: JobExecution) async throws {
        let arguments = try execution.job.decodeArguments(as: RefundDefence.Arguments.self)
        let plan: Plan = try await client.withTransaction(logger: logger) { connection in
            guard let request = try await requests.lockedRequest(arguments.requestId, on: connection), request.state == .pending else {
                try await execution.complete(on: connection)
                return .done
            }
            let now = clock()
            if now >= request.deadlineAt {
                try await close(request, .missedDeadline, error: request.lastError ?? "Apple's 12 hours passed", attempted: false, now: now, execution, on: connection)
                return .done
            }
            guard try await requests.hasConsented(request.accountId, on: connection) else {
                try await close(request, .noConsent, error: nil, attempted: false, now: now, execution, on: connection)
                return .done
            }
            if let answer = request.appAnswer { return .send(request, answer) }
            let consumption = request.purchase == .consumable
                ? try await credits.consumption(ofTopUp: request.transactionId, on: connection)
                : try await credits.consumption(ofSubscription: request.originalTransactionId, period: request.billingPeriod, on: connection)
            return .send(request, policy.answer(for: request.purchase, consumption: consumption))
        }
        guard case .send(let request, let answer) = plan else { return }
        let environment = AppStoreEnvironment(rawValue: request.environment)
        let failure: AppStoreServerError?
        do {
            try await serverAPI.sendConsumptionInformation(answer, transactionId: request.transactionId, environment: environment)
            failure = nil
        } catch {
            failure = error
        }
        let now = clock()
        try await client.withTransaction(logger: logger) { connection in
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
