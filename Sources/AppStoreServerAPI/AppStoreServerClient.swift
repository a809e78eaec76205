import AppStoreModels
import AsyncHTTPClient
import Foundation
import Logging
import NIOCore
import NIOHTTP1
import SignedData

/// A client of the App Store Server API on async-http-client: a fresh ES256 token per request, production or
/// sandbox base URL (or an override), Apple's retryable errors and 429s retried with backoff, and every signed item
/// verified by the same ``SignedDataVerifier`` as notifications before it is returned.
public struct AppStoreServerClient: Sendable {
    public static let productionURL = "https://api.storekit.apple.com"
    public static let sandboxURL = "https://api.storekit-sandbox.apple.com"

    let credentials: AppStoreServerCredentials
    let baseURLOverride: String?
    let verifier: SignedDataVerifier
    let httpClient: HTTPClient
    /// Waits between attempts of a retryable failure; its count is the number of retries.
    let retryDelays: [Duration]
    let clock: @Sendable () -> Date
    let logger: Logger

    public init(
        credentials: AppStoreServerCredentials, baseURL: String? = nil, verifier: SignedDataVerifier,
        httpClient: HTTPClient = .shared, retryDelays: [Duration] = [.seconds(1), .seconds(4), .seconds(15)],
        clock: @escaping @Sendable () -> Date = { Date() }, logger: Logger
    ) {
        self.credentials = credentials
        self.baseURLOverride = baseURL
        self.verifier = verifier
        self.httpClient = httpClient
        self.retryDelays = retryDelays
        self.clock = clock
        self.logger = logger
    }

    /// The base URL for an environment: the override when configured.
    public func baseURL(for environment: AppStoreEnvironment) -> String {
        baseURLOverride ?? (environment == .production ? Self.productionURL : Self.sandboxURL)
    }

    // MARK: Endpoints

    /// Get All Subscription Statuses: the latest transaction and renewal info of every subscription in the groups of
    /// `transactionId`, verified.
    public func subscriptionStatuses(transactionId: String, environment: AppStoreEnvironment) async throws(AppStoreServerError)
        -> [SubscriptionStatusItem]
    {
        let response: StatusResponse = try await send(.GET, "/inApps/v1/subscriptions/\(Self.escape(transactionId))", environment: environment)
        var items: [SubscriptionStatusItem] = []
        for group in response.data {
            for last in group.lastTransactions {
                let transaction = try await verified { () async throws(VerificationError) in
                    try await verifier.verifyTransaction(last.signedTransactionInfo)
                }
                var renewal: RenewalInfoPayload?
                if let signed = last.signedRenewalInfo {
                    renewal = try await verified { () async throws(VerificationError) in try await verifier.verifyRenewalInfo(signed) }
                }
                items.append(
                    SubscriptionStatusItem(
                        status: last.status, transaction: transaction, renewalInfo: renewal,
                        signedData: [last.signedTransactionInfo, last.signedRenewalInfo].compactMap { $0 }.joined(separator: "\n")))
            }
        }
        return items
    }

    /// One page of Get Notification History.
    public func notificationHistory(_ query: NotificationHistoryQuery, paginationToken: String?) async throws(AppStoreServerError)
        -> NotificationHistoryPage
    {
        struct Body: Encodable {
            var startDate: Int64
            var endDate: Int64
            var onlyFailures: Bool?
        }
        let body = Body(
            startDate: Self.milliseconds(query.startDate), endDate: Self.milliseconds(query.endDate),
            onlyFailures: query.onlyFailures ? true : nil)
        var path = "/inApps/v1/notifications/history"
        if let paginationToken { path += "?paginationToken=\(Self.escape(paginationToken))" }
        let response: NotificationHistoryResponse = try await send(.POST, path, body: body, environment: query.environment)
        return NotificationHistoryPage(
            signedPayloads: response.notificationHistory.map(\.signedPayload), paginationToken: response.paginationToken,
            hasMore: response.hasMore ?? false)
    }

    /// Get Transaction Info, verified.
    public func transactionInfo(transactionId: String, environment: AppStoreEnvironment) async throws(AppStoreServerError) -> TransactionPayload {
        struct Response: Decodable { var signedTransactionInfo: String }
        let response: Response = try await send(.GET, "/inApps/v1/transactions/\(Self.escape(transactionId))", environment: environment)
        return try await verified { () async throws(VerificationError) in try await verifier.verifyTransaction(response.signedTransactionInfo) }
    }

    /// Get Transaction History (v2), one page, verified; pass the returned revision back while `hasMore`.
    public func transactionHistory(transactionId: String, revision: String?, environment: AppStoreEnvironment)
        async throws(AppStoreServerError) -> (transactions: [TransactionPayload], revision: String?, hasMore: Bool)
    {
        try await transactionPage("/inApps/v2/history/\(Self.escape(transactionId))", revision: revision, environment: environment)
    }

    /// One page of an endpoint answering `{signedTransactions, revision, hasMore}` (transaction history, refund
    /// history), each transaction verified.
    func transactionPage(_ path: String, revision: String?, environment: AppStoreEnvironment)
        async throws(AppStoreServerError) -> (transactions: [TransactionPayload], revision: String?, hasMore: Bool)
    {
        struct Response: Decodable {
            var signedTransactions: [String]
            var revision: String?
            var hasMore: Bool?
        }
        let query = revision.map { "?revision=\(Self.escape($0))" } ?? ""
        let response: Response = try await send(.GET, path + query, environment: environment)
        var transactions: [TransactionPayload] = []
        for signed in response.signedTransactions {
            transactions.append(try await verified { () async throws(VerificationError) in try await verifier.verifyTransaction(signed) })
        }
        return (transactions, response.revision, response.hasMore ?? false)
    }

    /// Request a Test Notification: Apple sends a TEST notification to the configured URL; returns its token.
    public func requestTestNotification(environment: AppStoreEnvironment) async throws(AppStoreServerError) -> String {
        struct Response: Decodable { var testNotificationToken: String }
        let response: Response = try await send(.POST, "/inApps/v1/notifications/test", environment: environment)
        return response.testNotificationToken
    }

    /// Get Test Notification Status.
    public func testNotificationStatus(token: String, environment: AppStoreEnvironment) async throws(AppStoreServerError)
        -> TestNotificationStatus
    {
        let response: TestNotificationStatusResponse = try await send(
            .GET, "/inApps/v1/notifications/test/\(Self.escape(token))", environment: environment)
        return TestNotificationStatus(
            attempts: (response.sendAttempts ?? []).map {
                .init(date: Date(timeIntervalSince1970: Double($0.attemptDate) / 1000), result: $0.sendAttemptResult)
            })
    }

    /// Set App Account Token: links the subscription's current and future transactions to an account.
    public func setAppAccountToken(_ account: UUID, originalTransactionId: String, environment: AppStoreEnvironment)
        async throws(AppStoreServerError)
    {
        struct Body: Encodable { var appAccountToken: String }
        let _: Empty = try await send(
            .PUT, "/inApps/v1/transactions/\(Self.escape(originalTransactionId))/appAccountToken",
            body: Body(appAccountToken: account.uuidString.lowercased()), environment: environment)
    }

    /// Send Consumption Information (v2): the answer to a CONSUMPTION_REQUEST about `transactionId`. Apple answers
    /// 202 with no body; a body it refuses is a 400 with its error code (not retryable).
    public func sendConsumptionInformation(_ answer: ConsumptionAnswer, transactionId: String, environment: AppStoreEnvironment)
        async throws(AppStoreServerError)
    {
        let _: Empty = try await send(
            .PUT, "/inApps/v2/transactions/consumption/\(Self.escape(transactionId))", body: answer, environment: environment)
    }

    struct Empty: Decodable {}
}
