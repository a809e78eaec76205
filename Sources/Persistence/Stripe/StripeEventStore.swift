import Foundation
import Logging
import PostgresNIO
import StripeStore

/// Stripe's webhook events (`stripe_events`, sql/0023), on the caller's connection: one statement per intent.
public struct StripeEventStore: Sendable {
    let logger: Logger

    public init(logger: Logger) { self.logger = logger }

    /// Stores an event unless its id is stored already; whether it was new. An ignored event (the other livemode's)
    /// keeps only its envelope: the table's trigger reduces it (sql/0070).
    public func insert(
        _ event: StripeEventEnvelope, body: [UInt8], signedAt: Date, ignored: Bool, on connection: PostgresConnection
    ) async throws -> Bool {
        let rows = try await connection.query(
            """
            INSERT INTO stripe_events (id, type, livemode, object_id, object_type, subscription_id, created_at, signed_at, ignored, body)
            VALUES (\(event.id), \(event.type), \(event.livemode), \(event.data.object.id), \(event.data.object.object),
                \(event.data.object.invoiceSubscription),
                \(Date(timeIntervalSince1970: Double(event.created))), \(signedAt), \(ignored), \(ByteBuffer(bytes: body)))
            ON CONFLICT (id) DO NOTHING
            RETURNING id
            """, logger: logger)
        for try await _ in rows { return true }
        return false
    }

    /// What the worker needs of a stored event.
    public struct Stored: Sendable {
        public var id: String
        public var type: String
        public var objectId: String?
        /// The subscription an invoice event bills.
        public var subscriptionId: String?
        public var createdAt: Date
    }

    /// A stored event.
    public func event(_ id: String, on connection: PostgresConnection) async throws -> Stored? {
        let rows = try await connection.query(
            "SELECT id, type, object_id, subscription_id, created_at FROM stripe_events WHERE id = \(id)", logger: logger)
        for try await (id, type, objectId, subscriptionId, createdAt) in rows.decode((String, String, String?, String?, Date).self) {
            return Stored(id: id, type: type, objectId: objectId, subscriptionId: subscriptionId, createdAt: createdAt)
        }
        return nil
    }

    /// Records what processing an event came to; an event found to hold nothing of Storekeeper's keeps only its
    /// envelope from then on: the table's trigger reduces it (sql/0070).
    public func markProcessed(_ id: String, outcome: String, on connection: PostgresConnection) async throws {
        try await connection.query(
            "UPDATE stripe_events SET processed_at = coalesce(processed_at, now()), outcome = \(outcome) WHERE id = \(id)", logger: logger)
    }
}
