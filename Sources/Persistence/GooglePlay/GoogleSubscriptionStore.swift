import Foundation
import GooglePlay
import Logging
import PostgresNIO
import Subscriptions

/// Reads of Play subscription tokens (`google_subscription_reads`) and the subscriptions derived from them
/// (`google_subscriptions`), sql/0032, on the caller's connection: one statement per intent.
public struct GoogleSubscriptionStore: Sendable {
    let logger: Logger

    public init(logger: Logger) { self.logger = logger }

    /// Keeps a read as Google answered it.
    public func insert(_ read: PlaySubscriptionRead, body: [UInt8], on connection: PostgresConnection) async throws {
        let line = read.purchase.mainLineItem
        try await connection.query(
            """
            INSERT INTO google_subscription_reads
                (purchase_token, read_at, subscription_state, expiry_time, latest_order_id, linked_purchase_token, body)
            VALUES (\(read.purchaseToken), \(read.readAt), \(read.purchase.subscriptionState.text), \(line?.expiryTime),
                \(line?.latestSuccessfulOrderId), \(read.purchase.linkedPurchaseToken), \(ByteBuffer(bytes: body)))
            ON CONFLICT (purchase_token, read_at) DO NOTHING
            """, logger: logger)
    }

    /// Notes on the filed token when it was last read.
    public func markRead(_ token: String, at date: Date, on connection: PostgresConnection) async throws {
        try await connection.query(
            "UPDATE google_purchase_tokens SET read_at = greatest(read_at, \(date)) WHERE purchase_token = \(token)", logger: logger)
    }

    /// Locks `tokens` for the rest of the transaction, in the order given (callers sort them, so two transactions
    /// never wait for each other crosswise).
    public func lock(_ tokens: [String], on connection: PostgresConnection) async throws {
        for token in tokens {
            // Read to its end: an error that comes while the lock is awaited (a cancellation) arrives with the rows.
            _ = try await connection.query("SELECT pg_advisory_xact_lock(hashtextextended('google-play:' || \(token), 0))", logger: logger)
                .collect()
        }
    }

    /// Every token linked to `token`, either way and at any distance, `token` included.
    public func chain(of token: String, on connection: PostgresConnection) async throws -> [String] {
        let rows = try await connection.query(
            """
            WITH RECURSIVE chain(token) AS (
                SELECT \(token)::text
                UNION
                SELECT CASE WHEN r.purchase_token = c.token THEN r.linked_purchase_token ELSE r.purchase_token END
                FROM google_subscription_reads r JOIN chain c ON r.purchase_token = c.token OR r.linked_purchase_token = c.token
                WHERE r.linked_purchase_token IS NOT NULL
            )
            SELECT token FROM chain WHERE token IS NOT NULL
            """, logger: logger)
        var tokens: [String] = []
        for try await token in rows.decode(String.self) { tokens.append(token) }
        return tokens
    }

    /// Every stored read of `tokens`. A body that no longer decodes throws: it was decodable when stored.
    public func reads(of tokens: [String], on connection: PostgresConnection) async throws -> [PlaySubscriptionRead] {
        let rows = try await connection.query(
            "SELECT purchase_token, read_at, body FROM google_subscription_reads WHERE purchase_token = ANY(\(tokens))", logger: logger)
        var reads: [PlaySubscriptionRead] = []
        for try await (token, readAt, body) in rows.decode((String, Date, ByteBuffer).self) {
            reads.append(
                PlaySubscriptionRead(
                    purchaseToken: token, readAt: readAt,
                    purchase: try JSONDecoder().decode(SubscriptionPurchaseV2.self, from: Data(body.readableBytesView))))
        }
        return reads
    }

    /// When each of `tokens` was revoked: by its `SUBSCRIPTION_REVOKED` notifications (the event's time, else when
    /// the notification arrived), or by a whole refund of one of its orders — Play voids an order "only when [it
    /// needs] to be revoked" (Voided Purchases API), and may say so by that alone. Either counts only once a read
    /// says the token expired (``PlayLifecycle``).
    public func revocations(of tokens: [String], on connection: PostgresConnection) async throws -> [String: Date] {
        let rows = try await connection.query(
            """
            SELECT purchase_token, min(at) FROM (
                SELECT purchase_token, coalesce(event_time, received_at) AS at FROM google_notifications
                WHERE purchase_token = ANY(\(tokens)) AND kind = 'subscription' AND notification_type = 12
                UNION ALL
                SELECT purchase_token, voided_at FROM google_voided_purchases WHERE purchase_token = ANY(\(tokens)) AND NOT is_partial
            ) AS revoked
            GROUP BY purchase_token
            """, logger: logger)
        var revoked: [String: Date] = [:]
        for try await (token, at) in rows.decode((String, Date).self) { revoked[token] = at }
        return revoked
    }

    /// The token whose reads name `orderId` as a paid order (a subscription's period), if any.
    public func token(ofOrder orderId: String, on connection: PostgresConnection) async throws -> String? {
        let rows = try await connection.query(
            "SELECT purchase_token FROM google_subscription_reads WHERE latest_order_id = \(orderId) LIMIT 1", logger: logger)
        for try await token in rows.decode(String.self) { return token }
        return nil
    }

    /// Records `account`'s claim of `token` at `date` (a newer claim of the token replaces an older one).
    public func claim(_ token: String, by account: AccountID, at date: Date, on connection: PostgresConnection) async throws {
        try await connection.query(
            """
            INSERT INTO google_purchase_claims (purchase_token, account_id, claimed_at) VALUES (\(token), \(account.text), \(date))
            ON CONFLICT (purchase_token) DO UPDATE SET account_id = EXCLUDED.account_id, claimed_at = EXCLUDED.claimed_at
            """, logger: logger)
    }

    /// The account of the newest claim of any of `tokens` (a chain's), if any.
    public func claimingAccount(of tokens: [String], on connection: PostgresConnection) async throws -> AccountID? {
        let rows = try await connection.query(
            """
            SELECT account_id FROM google_purchase_claims WHERE purchase_token = ANY(\(tokens))
            ORDER BY claimed_at DESC, purchase_token LIMIT 1
            """, logger: logger)
        for try await account in rows.decode(String.self) { return AccountID(account) }
        return nil
    }

    /// Replaces what was derived for the chains of `tokens` with `subscriptions` (a chain whose first token became
    /// known since is filed under it, the old row removed).
    public func replace(_ subscriptions: [PlaySubscription], covering tokens: [String], at now: Date, on connection: PostgresConnection) async throws
    {
        try await connection.query("DELETE FROM google_subscriptions WHERE id = ANY(\(tokens)) OR current_token = ANY(\(tokens))", logger: logger)
        for subscription in subscriptions {
            try await connection.query(
                """
                INSERT INTO google_subscriptions
                    (id, current_token, tokens, product_id, state, expires_at, will_renew, is_trial, is_test, account_token, periods, derived_at)
                VALUES (\(subscription.id), \(subscription.currentToken), \(subscription.tokens), \(subscription.productId),
                    \(subscription.state.text), \(subscription.expiresAt), \(subscription.willRenew), \(subscription.isTrial), \(subscription.isTest),
                    \(subscription.accountToken), \(subscription.periods.count), \(now))
                """, logger: logger)
        }
    }
}
