import AppStoreModels
import Entitlements
import Foundation
import Logging
import PostgresNIO
import StatementFencing
import Subscriptions

/// Reads and writes ``SubscriptionState`` rows.
public struct SubscriptionStore: Sendable {
    let client: PostgresClient
    let logger: Logger

    public init(client: PostgresClient, logger: Logger) {
        self.client = client
        self.logger = logger
    }

    /// The subscription, locked for the rest of the caller's transaction — also when it has no row yet, so two
    /// writers of a new subscription serialize too. `lockHeld`: an earlier statement of the transaction took the lock
    /// already (as ``NotificationStore/notificationLockingSubscription(_:on:)`` does), which saves a round trip.
    public func lockedSubscription(_ originalTransactionId: String, on connection: PostgresConnection, lockHeld: Bool = false)
        async throws -> SubscriptionState?
    {
        if !lockHeld { try await lock(originalTransactionId, on: connection) }
        return try await connection.run(SubscriptionRow(originalTransactionId: originalTransactionId), logger: logger).first
    }

    /// Locks the subscription for the rest of the caller's transaction, also when it has no row yet. Never in the
    /// same statement as a read it guards: a statement reads as of its start, so a read in the statement that waited
    /// for the lock would miss what the previous holder committed meanwhile.
    public func lock(_ originalTransactionId: String, on connection: PostgresConnection) async throws {
        _ = try await connection.run(LockSubscription(originalTransactionId: originalTransactionId), logger: logger)
    }

    /// One subscription by its store and the store's id for it.
    public func subscription(of store: Store, id: String) async throws -> SubscriptionState? {
        let rows = try await client.fencedQuery(
            """
            SELECT \(unescaped: Self.columns) FROM subscriptions
            WHERE original_transaction_id = \(id) AND coalesce(store, subscription_store_before_0033(original_transaction_id)) = \(store.text)
            """,
            logger: logger
        )
        for try await row in rows { return try Self.decode(row) }
        return nil
    }

    /// One subscription by its id alone, whichever store sells it (`GET /v1/subscriptions/{originalTransactionId}`:
    /// the stores' ids cannot collide, see sql/0033).
    public func subscription(_ originalTransactionId: String) async throws -> SubscriptionState? {
        let rows = try await client.fencedQuery(
            "SELECT \(unescaped: Self.columns) FROM subscriptions WHERE original_transaction_id = \(originalTransactionId)",
            logger: logger
        )
        for try await row in rows { return try Self.decode(row) }
        return nil
    }

    /// Which of `ids` are filed as subscriptions of `store`, the earliest filed first.
    public func filed(of store: Store, among ids: [String], on connection: PostgresConnection) async throws -> [String] {
        let rows = try await connection.query(
            """
            SELECT original_transaction_id FROM subscriptions WHERE original_transaction_id = ANY(\(ids)) AND store = \(store.text)
            ORDER BY created_at, original_transaction_id
            """, logger: logger)
        var filed: [String] = []
        for try await id in rows.decode(String.self) { filed.append(id) }
        return filed
    }

    /// Up to `limit` ids of `store`'s subscriptions after `after`, in key order: a walk over every subscription in
    /// batches (an index range of the primary key each). A row from before sql/0033 that its backfill has not reached
    /// yet is filed by the rule it was written under.
    public func ids(of store: Store, after: String, limit: Int, on connection: PostgresConnection) async throws -> [String] {
        let rows = try await connection.query(
            """
            SELECT original_transaction_id FROM subscriptions WHERE original_transaction_id > \(after)
                AND coalesce(store, subscription_store_before_0033(original_transaction_id)) = \(store.text)
            ORDER BY original_transaction_id LIMIT \(limit)
            """, logger: logger)
        var ids: [String] = []
        for try await id in rows.decode(String.self) { ids.append(id) }
        return ids
    }

    /// Files the Play subscription `extra` under `kept`, in the caller's transaction holding the chain: one chain was
    /// filed as two (its tokens were read in an order that linked them only later). Its credit windows and searchable
    /// order ids move to `kept` — which is derived next with every period of both — its analytics contribution is
    /// withdrawn (the rollups take the difference), and its row goes. Its events stay in the history.
    public func merge(googlePlay extra: String, into kept: String, on connection: PostgresConnection) async throws {
        try await connection.query(
            "UPDATE credit_buckets SET original_transaction_id = \(kept) WHERE original_transaction_id = \(extra)", logger: logger)
        try await connection.query(
            "UPDATE subscription_transactions SET original_transaction_id = \(kept) WHERE original_transaction_id = \(extra)", logger: logger)
        try await connection.query(
            """
            SELECT analytics_record(\(extra), '{}'::integer[], '{}'::text[], '{}'::text[], '{}'::text[], '{}'::text[], '{}'::text[], '{}'::bigint[])
            """, logger: logger)
        try await connection.query(
            "DELETE FROM subscriptions WHERE original_transaction_id = \(extra) AND store = 'google_play'", logger: logger)
    }

    /// Every subscription linked to `accountId`.
    public func subscriptions(forAccount accountId: AccountID) async throws -> [SubscriptionState] {
        try await client.withFencedConnection { try await subscriptions(forAccount: accountId, on: $0) }
    }

    /// Every subscription linked to `accountId`, read on the caller's connection.
    public func subscriptions(forAccount accountId: AccountID, on connection: PostgresConnection) async throws -> [SubscriptionState] {
        try await connection.run(PreparedQuery<AccountSubscriptions>(accountId), logger: logger).map(Self.decode)
    }

    /// The subscriptions of account `$1`.
    enum AccountSubscriptions: PreparedSQL {
        static let sql = "SELECT \(columns) FROM subscriptions WHERE account_id = $1"
    }

    /// Inserts or replaces the row of `state`.
    public func save(_ state: SubscriptionState, on connection: PostgresConnection) async throws {
        _ = try await connection.run(SaveSubscription(state: state), logger: logger)
    }

    static let columns = """
        original_transaction_id, account_id, product_id, environment, status, will_renew, auto_renew_product_id, \
        pending_product_id, purchase_date, expires_at, grace_period_expires_at, is_trial, ownership, \
        latest_transaction_id, last_event_type, last_signed_date, last_event_id, end_reason, revoked_at, offer_type, \
        offer_identifier, offer_discount_type, offer_period, price_increase, price, billing_period, access_until, store, \
        billing_plan, commitment_period, commitment_periods, commitment_ends_at, commitment_renews_to, \
        commitment_price_after, win_back_offer_ids, app_transaction_id
        """

    /// ``columns`` as the fields of `composite`, a value of the table's row type.
    static func columns(of composite: String) -> String {
        columns.split(separator: ",").map { "(\(composite)).\($0.trimmingCharacters(in: .whitespacesAndNewlines))" }.joined(separator: ", ")
    }

    /// How many columns ``columns`` names.
    static let columnCount = columns.split(separator: ",").count

    /// The store of a row written before sql/0033 and not filled in yet: what the id's shape said then (the SQL twin is
    /// `subscription_store_before_0033`). Play's rows were never written so.
    static func storeBefore0033(of id: String) -> String { id.hasPrefix("sub_") ? "stripe" : "app_store" }

    static func decode(_ row: PostgresRow) throws -> SubscriptionState {
        let cells = row.makeRandomAccess()
        let statusText = try cells["status"].decode(String.self)
        guard let status = SubscriptionStatus(rawValue: statusText) else {
            throw PersistenceError(.corruptRecord, "subscription has unknown status \(statusText)")
        }
        let offer = try cells["offer_type"].decode(Int32?.self).map {
            SubscriptionState.Offer(
                type: OfferType(code: $0), identifier: try cells["offer_identifier"].decode(String?.self),
                discountType: try cells["offer_discount_type"].decode(String?.self).map(OfferDiscountType.init),
                period: try cells["offer_period"].decode(String?.self))
        }
        return SubscriptionState(
            originalTransactionId: try cells["original_transaction_id"].decode(String.self),
            accountId: try cells["account_id"].decode(AccountID?.self),
            productId: try cells["product_id"].decode(String.self),
            environment: AppStoreEnvironment(rawValue: try cells["environment"].decode(String.self)),
            status: status,
            willRenew: try cells["will_renew"].decode(Bool.self),
            autoRenewProductId: try cells["auto_renew_product_id"].decode(String?.self),
            pendingProductId: try cells["pending_product_id"].decode(String?.self),
            purchaseDate: try cells["purchase_date"].decode(Date?.self)?.wholeMilliseconds,
            expiresAt: try cells["expires_at"].decode(Date?.self)?.wholeMilliseconds,
            gracePeriodExpiresAt: try cells["grace_period_expires_at"].decode(Date?.self)?.wholeMilliseconds,
            isTrial: try cells["is_trial"].decode(Bool.self),
            ownership: Ownership(try cells["ownership"].decode(String.self)),
            latestTransactionId: try cells["latest_transaction_id"].decode(String.self),
            lastEventType: NotificationType(try cells["last_event_type"].decode(String.self)),
            lastEvent: EventPosition(
                signedDate: try cells["last_signed_date"].decode(Int64.self),
                eventId: try cells["last_event_id"].decode(String.self)),
            endReason: try cells["end_reason"].decode(String?.self).map(EndReason.init),
            revokedAt: try cells["revoked_at"].decode(Date?.self)?.wholeMilliseconds,
            offer: offer,
            priceIncrease: try cells["price_increase"].decode(String?.self).flatMap(SubscriptionState.PriceIncreaseConsent.init),
            price: try cells["price"].decode(Int64?.self),
            billingPeriodKey: try cells["billing_period"].decode(String.self),
            accessUntil: try cells["access_until"].decode(Date?.self)?.wholeMilliseconds,
            store: Store(
                try cells["store"].decode(String?.self) ?? Self.storeBefore0033(of: try cells["original_transaction_id"].decode(String.self))),
            billingPlan: try cells["billing_plan"].decode(String?.self).map(BillingPlan.init) ?? .billedUpfront,
            commitment: try commitment(cells),
            winBackOfferIds: try cells["win_back_offer_ids"].decode([String]?.self) ?? [],
            appTransactionId: try cells["app_transaction_id"].decode(String?.self)
        )
    }

    private static func commitment(_ cells: PostgresRandomAccessRow) throws -> SubscriptionState.Commitment? {
        guard let period = try cells["commitment_period"].decode(Int32?.self) else { return nil }
        return SubscriptionState.Commitment(
            period: Int(period), of: Int(try cells["commitment_periods"].decode(Int32?.self) ?? 12),
            endsAt: try cells["commitment_ends_at"].decode(Date?.self)?.wholeMilliseconds,
            renewsTo: try cells["commitment_renews_to"].decode(String?.self),
            priceAfter: try cells["commitment_price_after"].decode(Int64?.self))
    }
}
