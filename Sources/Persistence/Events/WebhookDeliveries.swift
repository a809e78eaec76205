import Foundation
import Logging
import PostgresNIO
import StatementFencing
import Subscriptions

/// What is left to send to each webhook endpoint (`webhook_deliveries`) and every attempt (`webhook_attempts`), on the
/// caller's connection.
public struct WebhookDeliveries: Sendable {
    let logger: Logger

    public init(logger: Logger) { self.logger = logger }

    public enum State: String, Sendable, Codable {
        case pending, delivered, failed
        case unknown
    }

    /// One event's delivery to one endpoint.
    public struct Delivery: Sendable, Equatable {
        public var endpoint: String
        public var eventId: UUID
        public var state: State
        public var attempts: Int
        public var nextAttemptAt: Date?
        public var deliveredAt: Date?
    }

    /// One attempt of the delivery log.
    public struct Attempt: Sendable, Equatable {
        public var endpoint: String
        public var attemptedAt: Date
        public var statusCode: Int?
        public var latencyMilliseconds: Int
        public var error: String?

        public init(endpoint: String, attemptedAt: Date, statusCode: Int?, latencyMilliseconds: Int, error: String?) {
            self.endpoint = endpoint
            self.attemptedAt = attemptedAt
            self.statusCode = statusCode
            self.latencyMilliseconds = latencyMilliseconds
            self.error = error
        }
    }

    /// Records that each event is to be sent to its endpoint, in one statement however many there are; a delivery
    /// stored already is skipped, and none makes no round trip.
    public func add(_ deliveries: [(event: EventLog.Appended, endpoint: String)], on connection: PostgresConnection) async throws {
        guard !deliveries.isEmpty else { return }
        _ = try await connection.run(
            PreparedQuery<AddDeliveries>(
                deliveries.map(\.endpoint), deliveries.map(\.event.id), deliveries.map(\.event.account), deliveries.map(\.event.sequence)),
            logger: logger)
    }

    /// Adds the deliveries of the parallel arrays `$1` endpoint, `$2` event id, `$3` account, `$4` sequence; a pair
    /// stored already is skipped.
    enum AddDeliveries: PreparedSQL {
        static let sql = """
            INSERT INTO webhook_deliveries (endpoint, event_id, account_id, sequence)
            SELECT * FROM unnest($1::text[], $2::uuid[], $3::text[], $4::bigint[]) ON CONFLICT DO NOTHING
            """
    }

    /// The oldest event still to send to `endpoint` for `account`, with its delivery.
    public func head(endpoint: String, account: String, on connection: PostgresConnection) async throws
        -> (event: EventLog.StoredEvent, delivery: Delivery)?
    {
        let rows = try await connection.query(
            """
            SELECT \(unescaped: EventLog.columns(of: "e")),
                d.state, d.attempts, d.next_attempt_at, d.delivered_at
            FROM webhook_deliveries d JOIN events e ON e.id = d.event_id
            WHERE d.endpoint = \(endpoint) AND d.account_id = \(account) AND d.state = 'pending'
            ORDER BY d.sequence LIMIT 1
            """, logger: logger)
        for try await row in rows {
            let event = try EventLog.decode(row)
            let columns = row.makeRandomAccess()
            let first = EventLog.columnCount
            let delivery = Delivery(
                endpoint: endpoint, eventId: event.id, state: State(rawValue: try columns[first].decode(String.self)) ?? .unknown,
                attempts: try columns[first + 1].decode(Int.self), nextAttemptAt: try columns[first + 2].decode(Date?.self),
                deliveredAt: try columns[first + 3].decode(Date?.self))
            return (event, delivery)
        }
        return nil
    }

    /// Appends `attempt` to the log of `event`.
    public func record(_ attempt: Attempt, event: UUID, on connection: PostgresConnection) async throws {
        try await connection.query(
            """
            INSERT INTO webhook_attempts (endpoint, event_id, attempted_at, status_code, latency_ms, error)
            VALUES (\(attempt.endpoint), \(event), \(attempt.attemptedAt), \(attempt.statusCode), \(attempt.latencyMilliseconds), \(attempt.error))
            """, logger: logger)
    }

    /// Sets what an attempt left: `delivered`, `pending` with the next attempt's time, or `failed`.
    public func settle(
        endpoint: String, event: UUID, state: State, nextAttemptAt: Date?, at now: Date, on connection: PostgresConnection
    ) async throws {
        try await connection.query(
            """
            UPDATE webhook_deliveries SET state = \(state.rawValue), attempts = attempts + 1, next_attempt_at = \(nextAttemptAt),
                first_attempt_at = coalesce(first_attempt_at, \(now)),
                delivered_at = CASE WHEN \(state.rawValue) = 'delivered' THEN \(now) END
            WHERE endpoint = \(endpoint) AND event_id = \(event)
            """, logger: logger)
    }

    /// Puts an event's deliveries (to every endpoint, or one) back to pending with a fresh schedule; returns the
    /// (endpoint, account) pairs to wake.
    public func redeliver(event: UUID, endpoint: String?, on connection: PostgresConnection) async throws -> [(endpoint: String, account: String)] {
        let rows = try await connection.query(
            """
            UPDATE webhook_deliveries SET state = 'pending', attempts = 0, next_attempt_at = NULL, first_attempt_at = NULL,
                delivered_at = NULL
            WHERE event_id = \(event) AND (\(endpoint)::text IS NULL OR endpoint = \(endpoint)::text)
            RETURNING endpoint, account_id
            """, logger: logger)
        var woken: [(endpoint: String, account: String)] = []
        for try await (endpoint, account) in rows.decode((String, String).self) { woken.append((endpoint, account)) }
        return woken
    }

    /// Every delivery of `event`.
    public func deliveries(of event: UUID, on connection: PostgresConnection) async throws -> [Delivery] {
        let rows = try await connection.query(
            """
            SELECT endpoint, state, attempts, next_attempt_at, delivered_at FROM webhook_deliveries
            WHERE event_id = \(event) ORDER BY endpoint
            """, logger: logger)
        var deliveries: [Delivery] = []
        for try await (endpoint, state, attempts, next, delivered) in rows.decode((String, String, Int, Date?, Date?).self) {
            deliveries.append(
                Delivery(
                    endpoint: endpoint, eventId: event, state: State(rawValue: state) ?? .unknown, attempts: attempts, nextAttemptAt: next,
                    deliveredAt: delivered))
        }
        return deliveries
    }

    /// Every delivery of each of `events`, by event.
    public func deliveries(of events: [UUID], on connection: PostgresConnection) async throws -> [UUID: [Delivery]] {
        guard !events.isEmpty else { return [:] }
        let rows = try await connection.query(
            """
            SELECT event_id, endpoint, state, attempts, next_attempt_at, delivered_at FROM webhook_deliveries
            WHERE event_id = ANY(\(events)::uuid[]) ORDER BY endpoint
            """, logger: logger)
        var deliveries: [UUID: [Delivery]] = [:]
        for try await (event, endpoint, state, attempts, next, delivered) in rows.decode((UUID, String, String, Int, Date?, Date?).self) {
            deliveries[event, default: []].append(
                Delivery(
                    endpoint: endpoint, eventId: event, state: State(rawValue: state) ?? .unknown, attempts: attempts, nextAttemptAt: next,
                    deliveredAt: delivered))
        }
        return deliveries
    }

    /// The delivery log of `event`, oldest first.
    public func attempts(of event: UUID, on connection: PostgresConnection) async throws -> [Attempt] {
        let rows = try await connection.query(
            """
            SELECT endpoint, attempted_at, status_code, latency_ms, error FROM webhook_attempts
            WHERE event_id = \(event) ORDER BY id
            """, logger: logger)
        var attempts: [Attempt] = []
        for try await (endpoint, at, status, latency, error) in rows.decode((String, Date, Int?, Int, String?).self) {
            attempts.append(Attempt(endpoint: endpoint, attemptedAt: at, statusCode: status, latencyMilliseconds: latency, error: error))
        }
        return attempts
    }

    /// Events whose delivery `failed`, newest first, with the endpoint.
    public func failed(limit: Int, on connection: PostgresConnection) async throws -> [(
        event: UUID, endpoint: String, account: String, attempts: Int
    )] {
        let rows = try await connection.query(
            """
            SELECT event_id, endpoint, account_id, attempts FROM webhook_deliveries
            WHERE state = 'failed' ORDER BY sequence DESC LIMIT \(limit)
            """, logger: logger)
        var failed: [(event: UUID, endpoint: String, account: String, attempts: Int)] = []
        for try await row in rows.decode((UUID, String, String, Int).self) { failed.append(row) }
        return failed
    }

    /// Deliveries by state, and the creation time of the oldest event not delivered yet (pending).
    public func summary(on connection: PostgresConnection) async throws -> (counts: [State: Int], oldestPending: Date?) {
        let rows = try await connection.query(
            """
            SELECT d.state, count(*)::int, min(e.created_at) FILTER (WHERE d.state = 'pending')
            FROM webhook_deliveries d JOIN events e ON e.id = d.event_id GROUP BY d.state
            """, logger: logger)
        var counts: [State: Int] = [:]
        var oldest: Date?
        for try await (state, count, pendingOldest) in rows.decode((String, Int, Date?).self) {
            counts[State(rawValue: state) ?? .unknown, default: 0] += count
            if let pendingOldest { oldest = pendingOldest }
        }
        return (counts, oldest)
    }
}
