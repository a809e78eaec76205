import Events
import Foundation
import Logging
import Persistence
import PostgresNIO
import Subscriptions

/// Reading stored events and redelivering them: the feed (`GET /v1/events`), the operators' commands and API, the
/// dashboard.
public struct EventHistory: Sendable {
    private let client: PostgresClient
    private let log: EventLog
    private let deliveries: WebhookDeliveries
    private let queue: any JobScheduling

    public init(client: PostgresClient, queue: any JobScheduling, logger: Logger) {
        self.client = client
        self.log = EventLog(logger: logger)
        self.deliveries = WebhookDeliveries(logger: logger)
        self.queue = queue
    }

    /// One event with its deliveries and its delivery log.
    public struct Detail: Sendable {
        public var event: EventLog.StoredEvent
        public var deliveries: [WebhookDeliveries.Delivery]
        public var attempts: [WebhookDeliveries.Attempt]
    }

    /// Events after `cursor` in commit order (see ``EventLog/feed(after:types:limit:on:)``).
    public func feed(after cursor: EventCursor?, types: EventTypeFilter, limit: Int) async throws -> [EventLog.StoredEvent] {
        let names = types.patterns == ["*"] ? nil : types.types.map(\.rawValue)
        return try await client.withFencedConnection { try await log.feed(after: cursor, types: names, limit: limit, on: $0) }
    }

    /// The newest events, of one account and of the types `types` matches when given.
    public func recent(account: AccountID?, types: EventTypeFilter, limit: Int) async throws -> [EventLog.StoredEvent] {
        let names = types.patterns == ["*"] ? nil : types.types.map(\.rawValue)
        return try await client.withFencedConnection { try await log.recent(account: account, types: names, limit: limit, on: $0) }
    }

    public func detail(_ id: UUID) async throws -> Detail? {
        try await client.withFencedConnection { connection in
            guard let event = try await log.event(id, on: connection) else { return nil }
            return Detail(
                event: event, deliveries: try await deliveries.deliveries(of: id, on: connection),
                attempts: try await deliveries.attempts(of: id, on: connection))
        }
    }

    /// Deliveries that `failed`, newest first.
    /// Every delivery of each of `events`, by event (the account page's timeline).
    public func deliveries(of events: [UUID]) async throws -> [UUID: [WebhookDeliveries.Delivery]] {
        try await client.withFencedConnection { try await deliveries.deliveries(of: events, on: $0) }
    }

    public func failedDeliveries(limit: Int) async throws -> [(event: UUID, endpoint: String, account: String, attempts: Int)] {
        try await client.withFencedConnection { try await deliveries.failed(limit: limit, on: $0) }
    }

    /// Puts the event's deliveries (to every endpoint, or one) back to pending with a fresh schedule and wakes them;
    /// returns the endpoints (empty when the event has no delivery), `nil` when there is no such event.
    public func redeliver(_ id: UUID, endpoint: String? = nil) async throws -> [String]? {
        try await client.withFencedTransaction(logger: Logger(label: "storekeeper.events")) { connection in
            guard try await log.event(id, on: connection) != nil else { return nil }
            let woken = try await deliveries.redeliver(event: id, endpoint: endpoint, on: connection)
            try await queue.enqueue(try woken.map { try WebhookDeliveryJob.job(.init(endpoint: $0.endpoint, account: $0.account)) }, on: connection)
            return woken.map(\.endpoint)
        }
    }

    /// Deliveries by state and the creation time of the oldest event still pending.
    public func deliverySummary() async throws -> (counts: [WebhookDeliveries.State: Int], oldestPending: Date?) {
        try await client.withFencedConnection { try await deliveries.summary(on: $0) }
    }
}
