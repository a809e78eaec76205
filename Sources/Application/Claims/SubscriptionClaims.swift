import AppStoreModels
import Events
import Foundation
import Logging
import Persistence
import PostgresNIO
import Subscriptions

/// What happens when an account claims a purchase another account already owns (`STOREKEEPER_TRANSFER_POLICY`).
public enum TransferPolicy: String, Sendable, CaseIterable {
    /// Refuse the claim: the purchase stays with its owner.
    case keep
    /// Move the purchase to the claiming account and record who had it.
    case transfer
}

/// Claims of verified StoreKit 2 transactions by accounts (`POST /v1/accounts/{id}/transactions`): link the
/// subscription under the transfer policy, store the claim and apply it through ``SubscriptionWriter``, in one
/// transaction.
public struct SubscriptionClaims: Sendable {
    public enum Outcome: Sendable, Equatable {
        /// The claim was applied (or had been before).
        case claimed(SubscriptionState?)
        /// Another account owns the subscription and the policy is `keep`; nothing changed.
        case ownedElsewhere(AccountID)
        /// A consumable of the catalogue: its top-up credits went to the account (once per transaction).
        case toppedUp
        /// A lifetime unlock or a non-renewing pass of the catalogue: it entitles the account.
        case purchased
        /// The transaction is neither an auto-renewable subscription nor a product of the catalogue.
        case notASubscription
    }

    private let client: PostgresClient
    private let appStore: AppStoreSubscriptions
    private let subscriptions: SubscriptionStore
    private let history: SubscriptionHistory
    private let policy: TransferPolicy
    private let logger: Logger

    private let credits: CreditLedger
    private let events: EventRecorder?
    private let cache: AccountStatusCache?
    private let purchases: OneTimePurchases?

    public init(
        client: PostgresClient, policy: TransferPolicy, writer: SubscriptionWriter, credits: CreditLedger, events: EventRecorder?,
        purchases: OneTimePurchases? = nil, cache: AccountStatusCache? = nil, logger: Logger
    ) {
        self.purchases = purchases
        self.events = events
        self.cache = cache
        self.client = client
        self.credits = credits
        self.appStore = AppStoreSubscriptions(writer: writer, client: client, logger: logger)
        self.subscriptions = SubscriptionStore(client: client, logger: logger)
        self.history = SubscriptionHistory(logger: logger)
        self.policy = policy
        self.logger = logger
    }

    /// Claims `transaction` (verified from `signedTransaction`) for `account`.
    public func claim(_ transaction: TransactionPayload, signedTransaction: String, by account: AccountID, now: Date)
        async throws -> Outcome
    {
        // After the commit: a claim may move a subscription between accounts, so every cached account goes.
        defer { cache?.invalidateAll() }
        guard let event = SubscriptionEvent(claimOf: transaction, by: account) else {
            if let purchases, purchases.sells(transaction.productId) {
                // A one-time purchase stays with the first account that had it.
                return try await client.withFencedTransaction(logger: logger) { connection in
                    let cause = EventCause(notificationType: SubscriptionEvent.clientTransactionType, transactionId: transaction.transactionId)
                    let owner = try await purchases.record(
                        transaction, notificationType: nil, signedDate: nil, account: account, now: now, cause: cause, on: connection)
                    if let owner, owner != account { return .ownedElsewhere(owner) }
                    return .purchased
                }
            }
            guard credits.catalogue.topUp(ofProduct: transaction.productId) != nil else { return .notASubscription }
            _ = try await client.withFencedTransaction(logger: logger) { connection in
                try await TopUpPurchase(ledger: credits, events: events, logger: logger).record(
                    transaction, account: account, now: now,
                    cause: EventCause(notificationType: SubscriptionEvent.clientTransactionType, transactionId: transaction.transactionId),
                    on: connection)
            }
            return .toppedUp
        }
        return try await client.withFencedTransaction(logger: logger) { connection in
            let current = try await subscriptions.lockedSubscription(transaction.originalTransactionId, on: connection)
            // Under `transfer` the stored claim is the newest ownership fact: deriving moves the subscription and
            // records the transfer.
            if let owner = current?.accountId, owner != account, policy == .keep { return .ownedElsewhere(owner) }
            try await history.record(event, signedData: signedTransaction, on: connection)
            var alone: CreditLedger.DeferredPosts?
            let change = try await appStore.apply(
                event, to: try await appStore.read(event.transaction.originalTransactionId, on: connection), now: now, deferring: &alone,
                on: connection)
            return .claimed(try await appStore.store(change, on: connection).state)
        }
    }
}
