import Entitlements
import Foundation
import Logging
import PostgresNIO
import Subscriptions

/// Apple's `RESCIND_CONSENT` notifications (`consent_rescissions`, sql/0044), each linked to the account whose App
/// Store subscription carries the same `appTransactionId` in the same environment — when one is known, or later
/// when one arrives.
public struct ConsentRescissions: Sendable {
    let logger: Logger

    public init(logger: Logger) { self.logger = logger }

    /// One rescinded consent, linked to its account.
    public struct Rescission: Sendable, Equatable {
        public var notificationUUID: String
        public var appTransactionId: String
        public var environment: StoreEnvironment
        public var rescindedAt: Date
        public var account: AccountID?
    }

    /// Stores a rescission, linked in the same statement to the account of a subscription with its app transaction
    /// (the most recently changed when several name one); stored again, it keeps its first link. Returns it as stored.
    public func record(
        notificationUUID: String, appTransactionId: String, environment: StoreEnvironment, rescindedAt: Date, now: Date,
        on connection: PostgresConnection
    ) async throws -> Rescission {
        try await lock(appTransactionId, on: connection)
        let rows = try await connection.query(
            """
            WITH owner AS (
                SELECT account_id FROM subscriptions
                WHERE app_transaction_id = \(appTransactionId) AND environment = \(environment) AND account_id IS NOT NULL
                ORDER BY updated_at DESC LIMIT 1
            )
            INSERT INTO consent_rescissions (notification_uuid, app_transaction_id, environment, rescinded_at, account_id, linked_at)
            SELECT \(notificationUUID), \(appTransactionId), \(environment), \(rescindedAt), owner.account_id,
                CASE WHEN owner.account_id IS NULL THEN NULL ELSE \(now)::timestamptz END
            FROM (SELECT 1) AS one LEFT JOIN owner ON true
            ON CONFLICT (notification_uuid) DO UPDATE SET
                account_id = coalesce(consent_rescissions.account_id, EXCLUDED.account_id),
                linked_at = coalesce(consent_rescissions.linked_at, EXCLUDED.linked_at)
            RETURNING account_id
            """, logger: logger)
        var account: AccountID?
        for try await linked in rows.decode(AccountID?.self) { account = linked }
        return Rescission(
            notificationUUID: notificationUUID, appTransactionId: appTransactionId, environment: environment, rescindedAt: rescindedAt,
            account: account)
    }

    /// Links to `account` every rescission of `appTransactionId` in `environment` that no account was known for;
    /// returns those it linked. Asked when a subscription first names an app transaction or an owner.
    public func link(
        appTransactionId: String, environment: StoreEnvironment, to account: AccountID, now: Date, on connection: PostgresConnection
    ) async throws -> [Rescission] {
        try await lock(appTransactionId, on: connection)
        let rows = try await connection.query(
            """
            UPDATE consent_rescissions SET account_id = \(account), linked_at = \(now)
            WHERE app_transaction_id = \(appTransactionId) AND environment = \(environment) AND account_id IS NULL
            RETURNING notification_uuid, rescinded_at
            """, logger: logger)
        var linked: [Rescission] = []
        for try await (uuid, rescindedAt) in rows.decode((String, Date).self) {
            linked.append(
                Rescission(
                    notificationUUID: uuid, appTransactionId: appTransactionId, environment: environment, rescindedAt: rescindedAt, account: account))
        }
        return linked
    }

    /// Links every rescission no account was known for to the account of a subscription that now carries its app
    /// transaction in its environment (the most recently changed); returns those it linked. The `consent-link` job's
    /// sweep: it catches links the applies did not make — rows `storekeeper replay --write` filled, which sends no event.
    /// A rescission an apply links meanwhile is skipped (its row no longer has a NULL account once the apply commits).
    public func linkPending(now: Date, on connection: PostgresConnection) async throws -> [Rescission] {
        let rows = try await connection.query(
            """
            UPDATE consent_rescissions c SET account_id = owner.account_id, linked_at = \(now)
            FROM (
                SELECT DISTINCT ON (s.app_transaction_id, s.environment) s.app_transaction_id, s.environment, s.account_id
                FROM subscriptions s
                WHERE s.account_id IS NOT NULL
                  AND s.app_transaction_id IN (SELECT app_transaction_id FROM consent_rescissions WHERE account_id IS NULL)
                ORDER BY s.app_transaction_id, s.environment, s.updated_at DESC
            ) AS owner
            WHERE c.account_id IS NULL AND c.app_transaction_id = owner.app_transaction_id AND c.environment = owner.environment
            RETURNING c.notification_uuid, c.app_transaction_id, c.environment, c.rescinded_at, c.account_id
            """, logger: logger)
        var linked: [Rescission] = []
        for try await (uuid, appTransactionId, environment, rescindedAt, account) in rows.decode(
            (String, String, StoreEnvironment, Date, AccountID).self)
        {
            linked.append(
                Rescission(
                    notificationUUID: uuid, appTransactionId: appTransactionId, environment: environment, rescindedAt: rescindedAt, account: account))
        }
        return linked
    }

    /// Takes the app transaction's lock for the rest of the transaction, before the statement that reads or writes its
    /// link: a rescission stored while a subscription first names its app transaction would otherwise miss the link
    /// both ways (neither sees the other's uncommitted row) and never reach the account. The next statement's snapshot
    /// is taken after the other writer committed.
    private func lock(_ appTransactionId: String, on connection: PostgresConnection) async throws {
        try await connection.query(
            "SELECT pg_advisory_xact_lock(hashtextextended('app-transaction:' || \(appTransactionId), 0))", logger: logger)
    }

    /// The account's rescinded consents, newest first.
    public func rescissions(of account: AccountID, on connection: PostgresConnection) async throws -> [Rescission] {
        let rows = try await connection.query(
            """
            SELECT notification_uuid, app_transaction_id, environment, rescinded_at FROM consent_rescissions
            WHERE account_id = \(account) ORDER BY rescinded_at DESC, notification_uuid
            """, logger: logger)
        var found: [Rescission] = []
        for try await (uuid, appTransactionId, environment, rescindedAt) in rows.decode((String, String, StoreEnvironment, Date).self) {
            found.append(
                Rescission(
                    notificationUUID: uuid, appTransactionId: appTransactionId, environment: environment, rescindedAt: rescindedAt, account: account))
        }
        return found
    }
}
