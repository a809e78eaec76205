import AppStoreModels
import Credits
import Entitlements
import Foundation
import Logging
import PostgresNIO
import Subscriptions

/// Apple's consumption requests (`refund_requests`) and the accounts' consent to answer them
/// (`consumption_consents`), on the caller's connection.
public struct RefundRequests: Sendable {
    let logger: Logger

    public init(logger: Logger) { self.logger = logger }

    /// Where a request stands.
    public enum State: String, Sendable, Codable {
        /// Waiting for the app's answer window to close.
        case pending
        /// Apple accepted the answer.
        case sent
        /// The account has not consented: nothing was sent.
        case noConsent = "no_consent"
        /// Apple's 12 hours passed before an answer got through.
        case missedDeadline = "missed_deadline"
        /// Apple refused the answer's body.
        case rejected
        /// The store's API (the App Store Server API, or Play's) was not configured when the request arrived.
        case notConfigured = "not_configured"
        case unknown
    }

    /// One consumption request.
    public struct Request: Sendable, Equatable, Encodable {
        public var id: UUID
        public var accountId: AccountID
        public var transactionId: String
        public var originalTransactionId: String
        public var productId: String
        /// The billing period a subscription's request is about, as its cycle buckets are keyed (`webOrderLineItemId`,
        /// else the transaction id).
        public var billingPeriod: String
        public var purchase: RefundedPurchase
        public var environment: StoreEnvironment
        public var reason: String?
        public var requestedAt: Date
        public var answerAt: Date
        public var deadlineAt: Date
        public var state: State
        public var appAnswer: ConsumptionAnswer?
        public var sentAnswer: ConsumptionAnswer?
        public var attempts: Int
        public var lastError: String?
        public var answeredAt: Date?
        public var outcome: String?
        public var outcomeAt: Date?
        /// The store that asked: the App Store (a `CONSUMPTION_REQUEST`), or Google Play (a chargeback's review).
        public var store: Store = .appStore
        /// Play's `pendingRefundToken`, which `orders.reviewrefund` must carry back; never shown.
        public var reviewToken: String?

        enum CodingKeys: String, CodingKey {
            case id, accountId, transactionId, originalTransactionId, productId, billingPeriod, purchase, environment, reason, requestedAt
            case answerAt, deadlineAt, state, appAnswer, sentAnswer, attempts, lastError, answeredAt, outcome, outcomeAt, store
        }

        public init(
            id: UUID, accountId: AccountID, transactionId: String, originalTransactionId: String, productId: String,
            billingPeriod: String, purchase: RefundedPurchase, environment: StoreEnvironment, reason: String?, requestedAt: Date, answerAt: Date,
            deadlineAt: Date,
            state: State
        ) {
            self.id = id
            self.accountId = accountId
            self.transactionId = transactionId
            self.originalTransactionId = originalTransactionId
            self.productId = productId
            self.billingPeriod = billingPeriod
            self.purchase = purchase
            self.environment = environment
            self.reason = reason
            self.requestedAt = requestedAt
            self.answerAt = answerAt
            self.deadlineAt = deadlineAt
            self.state = state
            self.attempts = 0
        }
    }

    /// Stores a new request; false when its id is stored already (a redelivered notification).
    public func open(_ request: Request, on connection: PostgresConnection) async throws -> Bool {
        let rows = try await connection.query(
            """
            INSERT INTO refund_requests (id, account_id, transaction_id, original_transaction_id, product_id, billing_period, purchase, environment,
                                         reason, requested_at, answer_at, deadline_at, state, store, review_token)
            VALUES (\(request.id), \(request.accountId), \(request.transactionId), \(request.originalTransactionId), \(request.productId),
                    \(request.billingPeriod), \(request.purchase.rawValue), \(request.environment), \(request.reason), \(request.requestedAt), \(request.answerAt),
                    \(request.deadlineAt), \(request.state.rawValue), \(request.store.text), \(request.reviewToken))
            ON CONFLICT (id) DO NOTHING RETURNING 1
            """, logger: logger)
        for try await _ in rows { return true }
        return false
    }

    /// One request, locked for the caller's transaction.
    public func lockedRequest(_ id: UUID, on connection: PostgresConnection) async throws -> Request? {
        let rows = try await connection.query(
            "SELECT \(unescaped: Self.columns) FROM refund_requests WHERE id = \(id) FOR UPDATE", logger: logger)
        for try await row in rows { return try Self.decode(row) }
        return nil
    }

    /// Stores the app's own answer of a request still pending; nil when there is no such request.
    public func recordAppAnswer(_ id: UUID, _ answer: ConsumptionAnswer, on connection: PostgresConnection) async throws -> Request? {
        let rows = try await connection.query(
            """
            UPDATE refund_requests SET app_answer = \(try Self.json(answer))::jsonb
            WHERE id = \(id) AND state = 'pending' RETURNING \(unescaped: Self.columns)
            """, logger: logger)
        for try await row in rows { return try Self.decode(row) }
        return nil
    }

    /// Records what became of a request: its state, the body sent and the error, if any; `attempted` when Apple was
    /// called.
    public func record(
        _ id: UUID, state: State, sent: ConsumptionAnswer?, error: String?, attempted: Bool, at now: Date, on connection: PostgresConnection
    ) async throws {
        let answer = try sent.map(Self.json)
        try await connection.query(
            """
            UPDATE refund_requests SET state = \(state.rawValue), attempts = attempts + \(attempted ? 1 : 0), last_error = \(error),
                sent_answer = coalesce(\(answer)::jsonb, sent_answer),
                answered_at = CASE WHEN \(state.rawValue) = 'pending' THEN answered_at ELSE \(now) END
            WHERE id = \(id)
            """, logger: logger)
    }

    /// Records the store's decision (Apple's `REFUND` or `REFUND_DECLINED`, Play's `REFUND` when it voided the order) on
    /// every open request of a transaction.
    public func recordOutcome(transactionId: String, outcome: String, at date: Date, on connection: PostgresConnection) async throws {
        try await connection.query(
            """
            UPDATE refund_requests SET outcome = \(outcome), outcome_at = \(date)
            WHERE transaction_id = \(transactionId) AND outcome IS NULL
            """, logger: logger)
    }

    /// An account's requests, newest first.
    public func requests(ofAccount account: AccountID, limit: Int, on connection: PostgresConnection) async throws -> [Request] {
        let rows = try await connection.query(
            """
            SELECT \(unescaped: Self.columns) FROM refund_requests WHERE account_id = \(account)
            ORDER BY requested_at DESC LIMIT \(limit)
            """, logger: logger)
        var requests: [Request] = []
        for try await row in rows { requests.append(try Self.decode(row)) }
        return requests
    }

    /// Records whether `account` consents to consumption data being sent to Apple.
    public func recordConsent(_ account: AccountID, consented: Bool, at now: Date, on connection: PostgresConnection) async throws {
        try await connection.query(
            """
            INSERT INTO consumption_consents (account_id, consented, recorded_at) VALUES (\(account), \(consented), \(now))
            ON CONFLICT (account_id) DO UPDATE SET consented = excluded.consented, recorded_at = excluded.recorded_at
            """, logger: logger)
    }

    /// Whether `account` consented; false when it never said.
    public func hasConsented(_ account: AccountID, on connection: PostgresConnection) async throws -> Bool {
        let rows = try await connection.query(
            "SELECT consented FROM consumption_consents WHERE account_id = \(account)", logger: logger)
        for try await consented in rows.decode(Bool.self) { return consented }
        return false
    }

    static let columns = """
        id, account_id, transaction_id, original_transaction_id, product_id, billing_period, purchase, environment, reason, \
        requested_at, answer_at, deadline_at, state, app_answer::text, sent_answer::text, attempts, last_error, answered_at, outcome, \
        outcome_at, store, review_token
        """

    static func decode(_ row: PostgresRow) throws -> Request {
        let columns = row.makeRandomAccess()
        var request = Request(
            id: try columns[0].decode(UUID.self), accountId: try columns[1].decode(AccountID.self),
            transactionId: try columns[2].decode(String.self), originalTransactionId: try columns[3].decode(String.self),
            productId: try columns[4].decode(String.self), billingPeriod: try columns[5].decode(String.self),
            purchase: RefundedPurchase(rawValue: try columns[6].decode(String.self)) ?? .subscription,
            environment: try columns[7].decode(StoreEnvironment.self), reason: try columns[8].decode(String?.self),
            requestedAt: try columns[9].decode(Date.self), answerAt: try columns[10].decode(Date.self),
            deadlineAt: try columns[11].decode(Date.self), state: State(rawValue: try columns[12].decode(String.self)) ?? .unknown)
        request.appAnswer = try columns[13].decode(String?.self).flatMap { try? JSONDecoder().decode(ConsumptionAnswer.self, from: Data($0.utf8)) }
        request.sentAnswer = try columns[14].decode(String?.self).flatMap { try? JSONDecoder().decode(ConsumptionAnswer.self, from: Data($0.utf8)) }
        request.attempts = try columns[15].decode(Int.self)
        request.lastError = try columns[16].decode(String?.self)
        request.answeredAt = try columns[17].decode(Date?.self)
        request.outcome = try columns[18].decode(String?.self)
        request.outcomeAt = try columns[19].decode(Date?.self)
        request.store = Store(try columns[20].decode(String.self))
        request.reviewToken = try columns[21].decode(String?.self)
        return request
    }

    static func json(_ answer: ConsumptionAnswer) throws -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        return String(decoding: try encoder.encode(answer), as: UTF8.self)
    }
}
