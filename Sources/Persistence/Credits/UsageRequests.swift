import Foundation
import Logging
import PostgresNIO
import Subscriptions

/// The first answer to each usage request (`usage_requests`), returned for every retry with the same idempotency key.
public struct UsageRequests: Sendable {
    /// One usage request (`POST /v1/accounts/{id}/usage`).
    public struct Request: Sendable {
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
    public struct Answer: Codable, Sendable, Equatable {
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

        public init(outcome: Outcome, meter: String, remaining: Int64?, error: String? = nil, message: String? = nil) {
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

    private let logger: Logger

    public init(logger: Logger) { self.logger = logger }

    public func storedAnswer(_ request: Request, on connection: PostgresConnection) async throws -> Answer? {
        let rows = try await connection.query(
            """
            SELECT meter, amount, answer::text FROM usage_requests
            WHERE account_id = \(request.account) AND idempotency_key = \(request.idempotencyKey)
            """,
            logger: logger)
        for try await (meter, amount, text) in rows.decode((String, Int64, String).self) {
            guard meter == request.meter, amount == request.amount else {
                return Answer(
                    outcome: .idempotencyKeyReused, meter: request.meter, remaining: nil, error: "idempotency_key_reused",
                    message: "idempotency key \(request.idempotencyKey) was used for \(amount) \(meter)")
            }
            guard let answer = try? JSONDecoder().decode(Answer.self, from: Data(text.utf8)) else {
                throw PersistenceError(.corruptRecord, "stored usage answer does not decode")
            }
            return answer
        }
        return nil
    }

    public func store(_ answer: Answer, for request: Request, on connection: PostgresConnection) async throws {
        let text = String(decoding: try JSONEncoder().encode(answer), as: UTF8.self)
        try await connection.query(
            """
            INSERT INTO usage_requests (account_id, idempotency_key, meter, amount, outcome, answer)
            VALUES (\(request.account), \(request.idempotencyKey), \(request.meter), \(request.amount), \(answer.outcome.rawValue), \(text)::jsonb)
            """,
            logger: logger)
    }
}
