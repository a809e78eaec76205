import Foundation
import GooglePlay
import Logging
import PostgresNIO

/// Google Play's pushed notifications (`google_notifications`, sql/0032) and the purchase tokens they named
/// (`google_purchase_tokens`), on the caller's connection: one statement per intent.
public struct GoogleNotificationStore: Sendable {
    let logger: Logger

    public init(logger: Logger) { self.logger = logger }

    /// Stores a notification unless its message id is stored already; whether it was new.
    public func insert(_ push: PubSubPush, notification: DeveloperNotification, on connection: PostgresConnection) async throws -> Bool {
        let rows = try await connection.query(
            """
            INSERT INTO google_notifications
                (message_id, subscription, published_at, package_name, event_time, kind, notification_type, purchase_token, body)
            VALUES (\(push.messageId), \(push.subscription), \(push.publishTime), \(notification.packageName), \(notification.eventTime),
                \(notification.kind), \(notification.notificationType), \(notification.purchaseToken), \(ByteBuffer(bytes: push.data)))
            ON CONFLICT (message_id) DO NOTHING
            RETURNING message_id
            """, logger: logger)
        for try await _ in rows { return true }
        return false
    }

    /// What the worker needs of a stored notification: its decoded body, as received.
    public struct Stored: Sendable {
        public var messageId: String
        public var notification: DeveloperNotification
        /// When it happened: the notification's `eventTimeMillis`, else Pub/Sub's publish time, else its arrival — the
        /// same for every run of its job.
        public var occurredAt: Date
    }

    /// A stored notification; `nil` when none has the id. A body that no longer decodes throws.
    public func notification(_ messageId: String, on connection: PostgresConnection) async throws -> Stored? {
        let rows = try await connection.query(
            "SELECT body, coalesce(event_time, published_at, received_at) FROM google_notifications WHERE message_id = \(messageId)", logger: logger)
        for try await (body, occurredAt) in rows.decode((ByteBuffer, Date).self) {
            return Stored(messageId: messageId, notification: try DeveloperNotification(data: Array(body.readableBytesView)), occurredAt: occurredAt)
        }
        return nil
    }

    /// Files the token a notification named, keeping the newest event's type (events arrive in any order).
    public func recordToken(_ notification: DeveloperNotification, messageId: String, on connection: PostgresConnection) async throws {
        guard let token = notification.purchaseToken else { return }
        let kind: String
        let product: String?
        switch notification.content {
        case .subscription: (kind, product) = ("subscription", nil)
        case .oneTimeProduct(_, _, let productId): (kind, product) = ("one_time_product", productId)
        case .voidedPurchase(_, _, let productType, _):
            (kind, product) = (productType == 1 ? "subscription" : productType == 2 ? "one_time_product" : "unknown", nil)
        case .pendingRefundReview, .test, .unknown: (kind, product) = ("unknown", nil)
        }
        try await connection.query(
            """
            INSERT INTO google_purchase_tokens (purchase_token, kind, product_id, last_event_at, last_notification_type, last_message_id)
            VALUES (\(token), \(kind), \(product), \(notification.eventTime), \(notification.notificationType), \(messageId))
            ON CONFLICT (purchase_token) DO UPDATE SET
                kind = CASE WHEN google_purchase_tokens.kind = 'unknown' THEN excluded.kind ELSE google_purchase_tokens.kind END,
                product_id = coalesce(google_purchase_tokens.product_id, excluded.product_id),
                last_event_at = greatest(google_purchase_tokens.last_event_at, excluded.last_event_at),
                last_notification_type = CASE
                    WHEN google_purchase_tokens.last_event_at IS NULL OR excluded.last_event_at >= google_purchase_tokens.last_event_at
                    THEN coalesce(excluded.last_notification_type, google_purchase_tokens.last_notification_type)
                    ELSE google_purchase_tokens.last_notification_type END,
                last_message_id = CASE
                    WHEN google_purchase_tokens.last_event_at IS NULL OR excluded.last_event_at >= google_purchase_tokens.last_event_at
                    THEN excluded.last_message_id ELSE google_purchase_tokens.last_message_id END
            """, logger: logger)
    }

    /// Files a token no notification named (a first import), unless it is filed already.
    public func fileToken(_ token: String, kind: String, source: String, on connection: PostgresConnection) async throws {
        try await connection.query(
            """
            INSERT INTO google_purchase_tokens (purchase_token, kind, last_message_id) VALUES (\(token), \(kind), \(source))
            ON CONFLICT (purchase_token) DO NOTHING
            """, logger: logger)
    }

    /// Every filed token and its kind (`subscription`, `one_time_product`, or `unknown` for one no read has placed
    /// yet), in token order after `after`.
    public func filedTokens(after: String, limit: Int, on connection: PostgresConnection) async throws -> [(token: String, kind: String)] {
        let rows = try await connection.query(
            "SELECT purchase_token, kind FROM google_purchase_tokens WHERE purchase_token > \(after) ORDER BY purchase_token LIMIT \(limit)",
            logger: logger)
        var tokens: [(token: String, kind: String)] = []
        for try await (token, kind) in rows.decode((String, String).self) { tokens.append((token, kind)) }
        return tokens
    }

    /// Files a token as the kind a read has shown it is (Google answered it as that kind).
    public func placeToken(_ token: String, kind: String, on connection: PostgresConnection) async throws {
        try await connection.query(
            "UPDATE google_purchase_tokens SET kind = \(kind) WHERE purchase_token = \(token) AND kind <> \(kind)", logger: logger)
    }

    /// Records what processing a notification came to.
    public func markProcessed(_ messageId: String, outcome: String, on connection: PostgresConnection) async throws {
        try await connection.query(
            "UPDATE google_notifications SET processed_at = coalesce(processed_at, now()), outcome = \(outcome) WHERE message_id = \(messageId)",
            logger: logger)
    }
}
