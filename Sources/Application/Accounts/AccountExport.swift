import Foundation
import Logging
import Persistence
import PostgresNIO
import Subscriptions

/// Everything Storekeeper holds about an account, as one JSON document (`POST /admin/accounts/{id}/export`, for a
/// customer's access request): its subscriptions and their transaction ids, the notifications and claims about them
/// (the signed JWS while it is kept, else the verified facts), ends and transfers, entitlement sources, credit buckets
/// and every ledger row, usage requests, purchase tokens, consent, refund requests, offer signatures, Stripe links,
/// events with their deliveries, and operator actions on it.
public struct AccountExport: Sendable {
    private let client: PostgresClient
    private let events: EventLog
    private let logger: Logger

    public init(client: PostgresClient, logger: Logger) {
        self.client = client
        self.events = EventLog(logger: logger)
        self.logger = logger
    }

    /// Answers once the database does (`PostgresClient.reachable`).
    public func reachable() async throws { try await client.reachable(logger: logger) }

    /// The document; `nil` when Storekeeper holds nothing about `account`.
    public func export(_ account: AccountID, now: Date) async throws -> String? {
        try await client.withFencedConnection { connection in
            let holdings = try await AccountHoldings(logger: logger).holdings(of: account, on: connection)
            let stored = try await events.recent(account: account, limit: 10_000, on: connection)
            let held = try JSONSerialization.jsonObject(with: Data(holdings.utf8)) as? [String: Any] ?? [:]
            let empty = held.values.allSatisfy { ($0 as? [Any])?.isEmpty ?? ($0 is NSNull) }
            guard !empty || !stored.isEmpty else { return nil }
            let events = "[" + stored.map(EventEnvelope.json).joined(separator: ",") + "]"
            let exportedAt = ISO8601DateFormatter().string(from: now)
            let accountText = String(decoding: try JSONEncoder().encode(account.text), as: UTF8.self)
            return "{\"accountId\":\(accountText),\"exportedAt\":\"\(exportedAt)\",\"holdings\":\(holdings),\"events\":\(events)}"
        }
    }
}
