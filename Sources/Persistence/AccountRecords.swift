import Credits
import Foundation
import GooglePlay
import Logging
import PostgresNIO
import Subscriptions

/// Read-only views of an account's records for operators: the events of its subscriptions, their archive and
/// transfers (`storekeeper accounts show`, the admin dashboard).
public struct AccountRecords: Sendable {
    /// One stored event of a subscription: a notification, or a transaction an app claimed.
    public struct Event: Codable, Sendable, Equatable {
        public var originalTransactionId: String
        /// `notificationUUID`, or the claim's event id.
        public var id: String
        public var type: String
        public var subtype: String?
        public var signedDate: Date
        public var receivedAt: Date
        /// `applied`, `unchanged`, `recorded`, `topped_up`, `rejected_content` (`duplicate`, `out_of_order` before 0007) — `nil` while waiting
        /// for a worker.
        public var outcome: String?
        /// Why the content was rejected (`rejected_content`).
        public var reason: String?

        /// The outcome as operators read it: `waiting`, `applied`, `rejected_content: <reason>`, ….
        public var outcomeText: String {
            guard let outcome else { return "waiting" }
            return reason.map { "\(outcome): \($0)" } ?? outcome
        }
    }

    /// One ended subscription.
    public struct ArchiveEntry: Codable, Sendable, Equatable {
        public var originalTransactionId: String
        public var transactionId: String
        public var reason: String
        public var productId: String
        public var endedAt: Date?
        public var reinstatedAt: Date?
    }

    /// One move of a subscription between accounts.
    public struct Transfer: Codable, Sendable, Equatable {
        public var originalTransactionId: String
        public var fromAccount: UUID
        public var toAccount: UUID
        public var transferredAt: Date
    }

    /// One ledger row of an account's credits.
    public struct LedgerEntry: Codable, Sendable, Equatable {
        public var at: Date
        public var operationKey: String
        public var bucket: String
        public var meter: String
        public var delta: Int64
        public var reason: String
    }

    private let client: PostgresClient
    private let logger: Logger

    public init(client: PostgresClient, logger: Logger) {
        self.client = client
        self.logger = logger
    }

    /// The events of these subscriptions and the notifications rejected for their content that name `account` in
    /// their transaction's `appAccountToken` (they created no subscription to be found through), newest first.
    public func events(ofSubscriptions originalTransactionIds: [String], account: AccountID, limit: Int = 200) async throws -> [Event] {
        let rows = try await client.fencedQuery(
            """
            SELECT original_transaction_id, id, type, subtype, signed_date, received_at, outcome, reason, play_type FROM (
                SELECT original_transaction_id, notification_uuid::text AS id, notification_type AS type, subtype,
                    signed_date, received_at, apply_outcome AS outcome, rejected_reason AS reason, NULL::integer AS play_type
                FROM notifications WHERE original_transaction_id = ANY(\(originalTransactionIds))
                UNION ALL
                SELECT original_transaction_id, event_id, decoded->>'notificationType', NULL, signed_date, received_at, 'applied',
                    NULL, NULL
                FROM subscription_events WHERE original_transaction_id = ANY(\(originalTransactionIds))
                UNION
                SELECT coalesce(original_transaction_id, '-'), notification_uuid::text, notification_type, subtype, signed_date,
                    received_at, apply_outcome, rejected_reason, NULL
                FROM notifications
                WHERE rejected_reason IS NOT NULL AND decoded->'transaction'->>'appAccountToken' = \(account.text)
                UNION ALL
                SELECT coalesce(e.subscription_id, o.subscription_id, e.object_id), e.id, e.type, NULL,
                    (extract(epoch FROM e.created_at) * 1000)::bigint, e.received_at, e.outcome, NULL, NULL
                FROM stripe_events e LEFT JOIN stripe_objects o ON o.id = e.object_id
                -- Three index lookups (one OR across the join would read every event).
                WHERE e.id IN (
                    SELECT id FROM stripe_events WHERE object_id = ANY(\(originalTransactionIds))
                    UNION SELECT id FROM stripe_events WHERE subscription_id = ANY(\(originalTransactionIds))
                    UNION SELECT held.id FROM stripe_objects named JOIN stripe_events held ON held.object_id = named.id
                        WHERE named.subscription_id = ANY(\(originalTransactionIds)))
                UNION ALL
                -- Google Play's notifications about any purchase token of the subscription's chain (its kind, with the
                -- numbered type where it has one: named by ``DeveloperNotification/name(kind:type:)``).
                SELECT g.id, n.message_id, n.kind, NULL, (extract(epoch FROM coalesce(n.event_time, n.received_at)) * 1000)::bigint,
                    n.received_at, n.outcome, NULL, coalesce(n.notification_type, 0)
                FROM google_subscriptions g JOIN google_notifications n ON n.purchase_token = ANY(g.tokens)
                -- A chain is filed under its first token, which may have become known after the subscription was
                -- (an older token read later): either names it.
                WHERE g.id = ANY(\(originalTransactionIds)) OR g.tokens && \(originalTransactionIds)
            ) events
            ORDER BY signed_date DESC, id DESC LIMIT \(limit)
            """,
            logger: logger
        )
        return try await Self.events(rows)
    }

    private static func events(_ rows: some AsyncSequence<PostgresRow, any Error>) async throws -> [Event] {
        var events: [Event] = []
        for try await (subscription, id, type, subtype, signedDate, receivedAt, outcome, reason, playType) in rows.decode(
            (String, String, String, String?, Int64, Date, String?, String?, Int?).self)
        {
            events.append(
                Event(
                    originalTransactionId: subscription, id: id,
                    type: playType.map { DeveloperNotification.name(kind: type, type: $0 == 0 ? nil : $0) } ?? type, subtype: subtype,
                    signedDate: Date(timeIntervalSince1970: Double(signedDate) / 1000), receivedAt: receivedAt,
                    outcome: outcome, reason: reason))
        }
        return events
    }

    /// The notifications received last, newest first.
    public func recentNotifications(limit: Int = 50) async throws -> [Event] {
        let rows = try await client.fencedQuery(
            """
            SELECT coalesce(original_transaction_id, '-'), notification_uuid::text, notification_type, subtype, signed_date,
                received_at, apply_outcome, rejected_reason, NULL::integer
            FROM notifications ORDER BY received_at DESC LIMIT \(limit)
            """,
            logger: logger
        )
        return try await Self.events(rows)
    }

    /// The ended subscriptions of an account, newest first.
    public func archive(ofAccount accountId: AccountID) async throws -> [ArchiveEntry] {
        let rows = try await client.fencedQuery(
            """
            SELECT original_transaction_id, transaction_id, reason, product_id, ended_at, reinstated_at
            FROM subscription_archive WHERE account_id = \(accountId) ORDER BY ended_at DESC NULLS LAST
            """,
            logger: logger
        )
        var entries: [ArchiveEntry] = []
        for try await (subscription, transaction, reason, product, endedAt, reinstatedAt) in rows.decode(
            (String, String, String, String, Date?, Date?).self)
        {
            entries.append(
                ArchiveEntry(
                    originalTransactionId: subscription, transactionId: transaction, reason: reason, productId: product,
                    endedAt: endedAt, reinstatedAt: reinstatedAt))
        }
        return entries
    }

    /// How many events Storekeeper keeps for `account` (what `events list --account` and the feed read).
    public func eventCount(ofAccount account: AccountID) async throws -> Int {
        let rows = try await client.fencedQuery("SELECT count(*)::int FROM events WHERE account_id = \(account.text)", logger: logger)
        for try await count in rows.decode(Int.self) { return count }
        return 0
    }

    /// Transfers from or to an account, newest first.
    public func transfers(ofAccount accountId: AccountID) async throws -> [Transfer] {
        let rows = try await client.fencedQuery(
            """
            SELECT original_transaction_id, from_account, to_account, transferred_at FROM account_transfers
            WHERE from_account = \(accountId) OR to_account = \(accountId) ORDER BY transferred_at DESC
            """,
            logger: logger
        )
        var transfers: [Transfer] = []
        for try await (subscription, from, to, at) in rows.decode((String, UUID, UUID, Date).self) {
            transfers.append(Transfer(originalTransactionId: subscription, fromAccount: from, toAccount: to, transferredAt: at))
        }
        return transfers
    }

    /// The consents the account's customer withdrew (Apple's `RESCIND_CONSENT`), newest first.
    public func consentRescissions(ofAccount accountId: AccountID) async throws -> [ConsentRescissions.Rescission] {
        try await client.withFencedConnection { connection in
            try await ConsentRescissions(logger: logger).rescissions(of: accountId, on: connection)
        }
    }

    /// The account's holds, newest first: what each held, and how it ended (settled, released, expired) or when it
    /// expires.
    public func holds(ofAccount accountId: AccountID, limit: Int = 50) async throws -> [CreditHold] {
        let rows = try await client.fencedQuery(
            """
            SELECT \(unescaped: CreditHoldStore.columns) FROM credit_holds WHERE account_id = \(accountId.text)
            ORDER BY created_at DESC, id LIMIT \(limit)
            """, logger: logger)
        var holds: [CreditHold] = []
        for try await row in rows { holds.append(try CreditHoldStore.decode(row)) }
        return holds
    }

    /// The credit ledger of an account — its own buckets and those of its subscriptions — newest first.
    public func ledger(ofAccount accountId: AccountID, limit: Int = 200) async throws -> [LedgerEntry] {
        let rows = try await client.fencedQuery(
            """
            SELECT l.created_at, l.operation_key, l.bucket, b.meter, l.delta, l.reason
            FROM credit_ledger l JOIN credit_buckets b ON b.key = l.bucket
            WHERE b.key IN (
                SELECT key FROM credit_buckets WHERE account_id = \(accountId)
                UNION ALL
                SELECT c.key FROM subscriptions s JOIN credit_buckets c ON c.original_transaction_id = s.original_transaction_id
                WHERE s.account_id = \(accountId))
            ORDER BY l.id DESC LIMIT \(limit)
            """,
            logger: logger
        )
        var entries: [LedgerEntry] = []
        for try await (at, key, bucket, meter, delta, reason) in rows.decode((Date, String, String, String, Int64, String).self) {
            entries.append(LedgerEntry(at: at, operationKey: key, bucket: bucket, meter: meter, delta: delta, reason: reason))
        }
        return entries
    }
}
