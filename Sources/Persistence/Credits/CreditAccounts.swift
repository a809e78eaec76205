import Credits
import Foundation
import Logging
import PostgresNIO
import Subscriptions

/// Account-level reads and spends, each in one transaction with the account locked: the status (subscriptions,
/// tier, credits — applying any grant that is due) and idempotent, atomic spending.
public struct CreditAccounts: Sendable {
    /// One usage request (`POST /v1/accounts/{id}/usage`).
    public struct UsageRequest: Sendable {
        public var account: AccountID
        public var meter: String
        public var amount: Int64
        public var idempotencyKey: String

        public init(account: AccountID, meter: String, amount: Int64, idempotencyKey: String) {
            self.account = account
            self.meter = meter
            self.amount = amount
            self.idempotencyKey = idempotencyKey
        }
    }

    /// The answer to a usage request; the first one is stored and returned for every retry with the same key.
    public struct UsageAnswer: Codable, Sendable, Equatable {
        /// What happened, as the domain says it (the HTTP layer maps it to a status).
        public enum Outcome: String, Codable, Sendable {
            case spent
            case insufficientCredits = "insufficient_credits"
            case idempotencyKeyReused = "idempotency_key_reused"
        }

        public var outcome: Outcome
        public var meter: String
        /// What is left after the request; `nil` for an unlimited meter.
        public var remaining: Int64?
        public var error: String?
        public var message: String?

        init(outcome: Outcome, meter: String, remaining: Int64?, error: String? = nil, message: String? = nil) {
            self.outcome = outcome
            self.meter = meter
            self.remaining = remaining
            self.error = error
            self.message = message
        }

        enum CodingKeys: String, CodingKey { case outcome, httpStatus, meter, remaining, error, message }

        public init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            // Answers stored before 0008 carry the HTTP status they were sent with.
            if let outcome = try container.decodeIfPresent(Outcome.self, forKey: .outcome) {
                self.outcome = outcome
            } else {
                switch try container.decode(Int.self, forKey: .httpStatus) {
                case 402: outcome = .insufficientCredits
                case 422: outcome = .idempotencyKeyReused
                default: outcome = .spent
                }
            }
            meter = try container.decode(String.self, forKey: .meter)
            remaining = try container.decodeIfPresent(Int64.self, forKey: .remaining)
            error = try container.decodeIfPresent(String.self, forKey: .error)
            message = try container.decodeIfPresent(String.self, forKey: .message)
        }

        public func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(outcome, forKey: .outcome)
            try container.encode(meter, forKey: .meter)
            try container.encodeIfPresent(remaining, forKey: .remaining)
            try container.encodeIfPresent(error, forKey: .error)
            try container.encodeIfPresent(message, forKey: .message)
        }
    }

    private let client: PostgresClient
    public let ledger: CreditLedger
    private let subscriptions: SubscriptionStore
    private let logger: Logger

    public init(client: PostgresClient, ledger: CreditLedger, logger: Logger) {
        self.client = client
        self.ledger = ledger
        self.subscriptions = SubscriptionStore(client: client, logger: logger)
        self.logger = logger
    }

    /// The account's subscriptions and credits at `now` (read-only: grants that are due count without being
    /// written).
    public func status(of account: AccountID, now: Date) async throws -> (subscriptions: [SubscriptionState], credits: AccountCredits) {
        try await client.withConnection { connection in
            let states = try await subscriptions.subscriptions(forAccount: account, on: connection)
            return (states, try await ledger.credits(of: account, subscriptions: states, now: now, materialize: false, on: connection))
        }
    }

    /// Spends `amount` of a meter: cycle credits first, then top-ups; all or nothing.
    public func spend(_ request: UsageRequest, now: Date) async throws -> UsageAnswer {
        try await client.withTransaction(logger: logger) { connection in
            try await ledger.lockAccount(request.account, on: connection)
            if let stored = try await storedAnswer(request, on: connection) { return stored }
            let states = try await subscriptions.subscriptions(forAccount: request.account, on: connection)
            let credits = try await ledger.credits(of: request.account, subscriptions: states, now: now, materialize: true, on: connection)
            let answer: UsageAnswer
            if credits.meters[request.meter]?.unlimited == true {
                answer = UsageAnswer(outcome: .spent, meter: request.meter, remaining: nil)
            } else {
                let buckets = try await ledger.liveBuckets(of: request.account, meter: request.meter, at: now, on: connection)
                let total = buckets.reduce(0) { $0 + max($1.balance, 0) }
                if let plan = SpendPlan.plan(amount: request.amount, from: buckets.map { ($0.bucket.key, $0.balance) }) {
                    let prefix = "spend:\(request.account.text):\(request.idempotencyKey)"
                    for (index, debit) in plan.debits.enumerated() {
                        try await ledger.post("\(prefix):\(index)", bucket: debit.bucket, delta: -debit.amount, reason: "usage", on: connection)
                    }
                    answer = UsageAnswer(outcome: .spent, meter: request.meter, remaining: total - request.amount)
                } else {
                    answer = UsageAnswer(
                        outcome: .insufficientCredits, meter: request.meter, remaining: total, error: "insufficient_credits",
                        message: "\(request.amount) \(request.meter) requested, \(total) left; nothing was deducted")
                }
            }
            try await store(answer, for: request, on: connection)
            return answer
        }
    }

    private func storedAnswer(_ request: UsageRequest, on connection: PostgresConnection) async throws -> UsageAnswer? {
        let rows = try await connection.query(
            """
            SELECT meter, amount, answer::text FROM usage_requests
            WHERE account_id = \(request.account) AND idempotency_key = \(request.idempotencyKey)
            """,
            logger: logger)
        for try await (meter, amount, text) in rows.decode((String, Int64, String).self) {
            guard meter == request.meter, amount == request.amount else {
                return UsageAnswer(
                    outcome: .idempotencyKeyReused, meter: request.meter, remaining: nil, error: "idempotency_key_reused",
                    message: "idempotency key \(request.idempotencyKey) was used for \(amount) \(meter)")
            }
            guard let answer = try? JSONDecoder().decode(UsageAnswer.self, from: Data(text.utf8)) else {
                throw PersistenceError(.corruptRecord, "stored usage answer does not decode")
            }
            return answer
        }
        return nil
    }

    private func store(_ answer: UsageAnswer, for request: UsageRequest, on connection: PostgresConnection) async throws {
        let text = String(decoding: try JSONEncoder().encode(answer), as: UTF8.self)
        try await connection.query(
            """
            INSERT INTO usage_requests (account_id, idempotency_key, meter, amount, outcome, answer)
            VALUES (\(request.account), \(request.idempotencyKey), \(request.meter), \(request.amount), \(answer.outcome.rawValue), \(text)::jsonb)
            """,
            logger: logger)
    }
}
