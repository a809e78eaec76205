import AppStoreModels
import AppStoreServerAPI
import Foundation
import Jobs
import Logging
import Persistence
import PostgresNIO
import Subscriptions

/// A late-renewal recheck: the period of `transactionId` ended without a renewal Storekeeper heard of, so ask Apple
/// (Get All Subscription Statuses), verify and apply the answer through the normal lifecycle path, and — while
/// Apple still reports billing retry or grace — look again with backoff. Stops when the period moved on, the
/// subscription ended, or auto-renew is off.
public struct RenewalRecheckJob: JobHandler {
    public let kind = RenewalRechecks.jobKind
    /// Database work and a few API calls with their own retries.
    public let timeout: Duration = .seconds(120)
    private let client: PostgresClient
    private let serverAPI: AppStoreServerClient
    private let appStore: AppStoreSubscriptions
    private let rechecks: RenewalRechecks
    private let subscriptions: SubscriptionStore
    private let history: SubscriptionHistory
    private let clock: @Sendable () -> Date
    private let logger: Logger

    /// Waits before looking again while Apple retries billing: doubling from `backoffBase`, at most a day.
    let backoffBase: TimeInterval

    public init(
        client: PostgresClient, serverAPI: AppStoreServerClient, writer: SubscriptionWriter, rechecks: RenewalRechecks,
        backoffBase: TimeInterval = 3600, clock: @escaping @Sendable () -> Date, logger: Logger
    ) {
        self.client = client
        self.serverAPI = serverAPI
        self.appStore = AppStoreSubscriptions(writer: writer, client: client, logger: logger)
        self.rechecks = rechecks
        self.subscriptions = SubscriptionStore(client: client, logger: logger)
        self.history = SubscriptionHistory(logger: logger)
        self.backoffBase = backoffBase
        self.clock = clock
        self.logger = logger
    }

    public func run(_ execution: JobExecution) async throws {
        let arguments = try execution.job.decodeArguments(as: RenewalRechecks.Arguments.self)
        let current = try await subscriptions.subscription(arguments.originalTransactionId)
        guard let current, current.latestTransactionId == arguments.transactionId, current.willRenew, current.status.isRunning else {
            // Settled without Apple's help: renewed, ended, or auto-renew turned off since.
            try await settle(arguments, appleStatus: nil, execution: execution)
            return
        }
        let environment: AppStoreEnvironment = arguments.environment == .production ? .production : .sandbox
        let items = try await Self.discardingTerminal { () async throws(AppStoreServerError) in
            try await serverAPI.subscriptionStatuses(transactionId: arguments.originalTransactionId, environment: environment)
        }
        guard let item = items.first(where: { $0.transaction.originalTransactionId == arguments.originalTransactionId }) else {
            throw JobFailure.discard("Apple reports no subscription \(arguments.originalTransactionId)")
        }
        if let problem = item.transaction.contentProblem ?? item.renewalInfo?.contentProblem {
            throw JobFailure.discard("Apple's answer for \(arguments.originalTransactionId) is rejected: \(problem)")
        }
        let event = SubscriptionEvent(serverStatus: item.status, transaction: item.transaction, renewalInfo: item.renewalInfo)
        let now = clock()
        let resolved =
            item.status == 2 || item.status == 5 || item.transaction.transactionId != arguments.transactionId
            || (item.status == 1 && (item.transaction.expiresDate ?? 0) > Int64(now.timeIntervalSince1970 * 1000))
        let checks = try await client.withFencedTransaction(logger: logger) { connection in
            try await history.record(event, signedData: item.signedData, on: connection)
            let decision = try await appStore.apply(event, now: now, on: connection)
            let checks = try await rechecks.records.recordCheck(
                arguments.originalTransactionId, transactionId: arguments.transactionId, appleStatus: item.status, resolved: resolved,
                on: connection)
            if resolved { try await execution.complete(on: connection) }
            logger.info(
                "renewal rechecked",
                metadata: [
                    "subscription.id": "\(arguments.originalTransactionId)", "apple.status": "\(item.status)",
                    "recheck.outcome": "\(resolved ? "resolved" : "still open")", "notification.outcome": "\(decision.kind.rawValue)",
                ])
            return checks
        }
        if !resolved {
            throw JobFailure.snooze(until: now.addingTimeInterval(min(backoffBase * pow(2, Double(max(checks - 1, 0))), 86_400)))
        }
    }

    /// Runs an API call; an error a retry cannot fix discards the job, others fail the attempt (retried with backoff).
    static func discardingTerminal<Value>(_ call: () async throws(AppStoreServerError) -> Value) async throws -> Value {
        let result: Result<Value, AppStoreServerError>
        do { result = .success(try await call()) } catch { result = .failure(error) }
        switch result {
        case .success(let value): return value
        case .failure(let error) where error.isRetryable: throw error
        case .failure(let error): throw JobFailure.discard("App Store Server API: \(error)")
        }
    }

    private func settle(_ arguments: RenewalRechecks.Arguments, appleStatus: Int32?, execution: JobExecution) async throws {
        try await client.withFencedTransaction(logger: logger) { connection in
            _ = try await rechecks.records.recordCheck(
                arguments.originalTransactionId, transactionId: arguments.transactionId, appleStatus: appleStatus, resolved: true,
                on: connection)
            try await execution.complete(on: connection)
        }
    }
}
