import Entitlements
import Logging
import PostgresNIO
import Subscriptions

extension SubscriptionStore {
    /// One of an account's App Store subscriptions, as support asks Apple about it.
    public struct HeldAppStoreSubscription: Sendable {
        public var originalTransactionId: String
        public var environment: StoreEnvironment
        public var status: String
    }

    /// The account's App Store subscriptions, the active first, then the latest to expire.
    public func appStoreSubscriptions(ofAccount account: AccountID) async throws -> [HeldAppStoreSubscription] {
        let rows = try await client.fencedQuery(
            """
            SELECT original_transaction_id, environment, status FROM subscriptions
            WHERE account_id = \(account.text) AND coalesce(store, subscription_store_before_0033(original_transaction_id)) = 'app_store'
            ORDER BY (status = 'active') DESC, expires_at DESC NULLS LAST
            """, logger: logger)
        var held: [HeldAppStoreSubscription] = []
        for try await (id, environment, status) in rows.decode((String, StoreEnvironment, String).self) {
            held.append(HeldAppStoreSubscription(originalTransactionId: id, environment: environment, status: status))
        }
        return held
    }
}
