import Foundation
import PostgresNIO
import Subscriptions

// The statements every apply runs, prepared: PostgreSQL parses and plans them once per connection.
extension SubscriptionStore {
    /// The SQL expression that takes the advisory lock of the subscription named by the SQL expression `subscription`
    /// for the rest of the transaction; it takes none, and is NULL, when `subscription` is NULL.
    static func lockSQL(subscription: String) -> String {
        "pg_advisory_xact_lock(hashtextextended('subscription:' || \(subscription), 0))"
    }

    /// Takes the advisory lock of a subscription for the rest of the transaction — also when it has no row yet, so
    /// two writers of a new subscription serialize too.
    struct LockSubscription: PostgresPreparedStatement {
        typealias Row = ()
        static let sql = "SELECT \(SubscriptionStore.lockSQL(subscription: "$1"))"
        static let bindingDataTypes: [PostgresDataType] = [.text]
        var originalTransactionId: String

        func makeBindings() -> PostgresBindings {
            var bindings = PostgresBindings(capacity: 1)
            bindings.append(originalTransactionId)
            return bindings
        }

        func decodeRow(_ row: PostgresRow) throws {}
    }

    /// The row of a subscription.
    struct SubscriptionRow: PostgresPreparedStatement {
        static let sql = "SELECT \(SubscriptionStore.columns) FROM subscriptions WHERE original_transaction_id = $1"
        static let bindingDataTypes: [PostgresDataType] = [.text]
        var originalTransactionId: String

        func makeBindings() -> PostgresBindings {
            var bindings = PostgresBindings(capacity: 1)
            bindings.append(originalTransactionId)
            return bindings
        }

        func decodeRow(_ row: PostgresRow) throws -> SubscriptionState { try SubscriptionStore.decode(row) }
    }

    /// Inserts or replaces the row of a subscription.
    struct SaveSubscription: PostgresPreparedStatement {
        typealias Row = ()
        static let sql = upsert(firstBind: 1)
        /// In the order of ``SubscriptionStore/columns``.
        static let bindingDataTypes: [PostgresDataType] = [
            .text, .text, .text, .text, .text, .bool, .text, .text, .timestamptz, .timestamptz, .timestamptz, .bool,
            .text, .text, .text, .int8, .text, .text, .timestamptz, .int4, .text, .text, .text, .text, .int8, .text, .timestamptz, .text,
            .text, .int4, .int4, .timestamptz, .text, .int8, .textArray, .text,
        ]
        var state: SubscriptionState

        /// The insert-or-replace, its values bound from `$firstBind` on (another statement can carry it in a `WITH`),
        /// made only where `condition` (SQL) holds when one is given.
        static func upsert(firstBind: Int, where condition: String? = nil) -> String {
            let values = (firstBind..<firstBind + bindingDataTypes.count).map { "$\($0)" }.joined(separator: ", ")
            let rows = condition.map { "SELECT \(values) WHERE \($0)" } ?? "VALUES (\(values))"
            return """
                INSERT INTO subscriptions (\(SubscriptionStore.columns))
                \(rows)
                ON CONFLICT (original_transaction_id) DO UPDATE SET
                    account_id = EXCLUDED.account_id, product_id = EXCLUDED.product_id,
                    environment = EXCLUDED.environment, status = EXCLUDED.status, will_renew = EXCLUDED.will_renew,
                    auto_renew_product_id = EXCLUDED.auto_renew_product_id,
                    pending_product_id = EXCLUDED.pending_product_id, purchase_date = EXCLUDED.purchase_date,
                    expires_at = EXCLUDED.expires_at, grace_period_expires_at = EXCLUDED.grace_period_expires_at,
                    is_trial = EXCLUDED.is_trial, ownership = EXCLUDED.ownership,
                    latest_transaction_id = EXCLUDED.latest_transaction_id, last_event_type = EXCLUDED.last_event_type,
                    last_signed_date = EXCLUDED.last_signed_date, last_event_id = EXCLUDED.last_event_id,
                    end_reason = EXCLUDED.end_reason, revoked_at = EXCLUDED.revoked_at, offer_type = EXCLUDED.offer_type,
                    offer_identifier = EXCLUDED.offer_identifier, offer_discount_type = EXCLUDED.offer_discount_type,
                    offer_period = EXCLUDED.offer_period, price_increase = EXCLUDED.price_increase, price = EXCLUDED.price,
                    billing_period = EXCLUDED.billing_period, access_until = EXCLUDED.access_until,
                    store = coalesce(subscriptions.store, EXCLUDED.store),
                    billing_plan = EXCLUDED.billing_plan, commitment_period = EXCLUDED.commitment_period,
                    commitment_periods = EXCLUDED.commitment_periods, commitment_ends_at = EXCLUDED.commitment_ends_at,
                    commitment_renews_to = EXCLUDED.commitment_renews_to,
                    commitment_price_after = EXCLUDED.commitment_price_after,
                    win_back_offer_ids = EXCLUDED.win_back_offer_ids,
                    app_transaction_id = EXCLUDED.app_transaction_id,
                    updated_at = now()
                """
        }

        /// Appends the values of `state` in the order of ``SubscriptionStore/columns``.
        static func append(_ state: SubscriptionState, to bindings: inout PostgresBindings) {
            bindings.append(state.originalTransactionId)
            bindings.append(state.accountId)
            bindings.append(state.productId)
            bindings.append(state.environment.rawValue)
            bindings.append(state.status.rawValue)
            bindings.append(state.willRenew)
            bindings.append(state.autoRenewProductId)
            bindings.append(state.pendingProductId)
            bindings.append(state.purchaseDate)
            bindings.append(state.expiresAt)
            bindings.append(state.gracePeriodExpiresAt)
            bindings.append(state.isTrial)
            bindings.append(state.ownership.text)
            bindings.append(state.latestTransactionId)
            bindings.append(state.lastEventType.name)
            bindings.append(state.lastEvent.signedDate)
            bindings.append(state.lastEvent.eventId)
            bindings.append(state.endReason?.text)
            bindings.append(state.revokedAt)
            bindings.append(state.offer?.type.code)
            bindings.append(state.offer?.identifier)
            bindings.append(state.offer?.discountType?.text)
            bindings.append(state.offer?.period)
            bindings.append(state.priceIncrease?.rawValue)
            bindings.append(state.price)
            bindings.append(state.billingPeriodKey)
            bindings.append(state.accessUntil)
            bindings.append(state.store.text)
            // An up-front plan is written as NULL, as rows from before the column say it.
            bindings.append(state.billingPlan == .billedUpfront ? nil : state.billingPlan.text)
            bindings.append(state.commitment.map { Int32(clamping: $0.period) })
            bindings.append(state.commitment.map { Int32(clamping: $0.of) })
            bindings.append(state.commitment?.endsAt)
            bindings.append(state.commitment?.renewsTo)
            bindings.append(state.commitment?.priceAfter)
            bindings.append(state.winBackOfferIds.isEmpty ? nil : state.winBackOfferIds)
            bindings.append(state.appTransactionId)
        }

        func makeBindings() -> PostgresBindings {
            var bindings = PostgresBindings(capacity: Self.bindingDataTypes.count)
            Self.append(state, to: &bindings)
            return bindings
        }

        func decodeRow(_ row: PostgresRow) throws {}
    }
}
