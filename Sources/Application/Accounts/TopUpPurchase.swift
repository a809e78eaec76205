import AppStoreModels
import Credits
import Entitlements
import Events
import Foundation
import Logging
import Persistence
import PostgresNIO
import Subscriptions

/// A consumable purchase (a `ONE_TIME_CHARGE`, its `REFUND`, or the app posting it), inside the caller's transaction:
/// its top-up credits go to the account the ledger already credited it to (whoever that was — token or claim), else
/// to `account`; a refund takes back what is left of them and a reversal gives it back (``TopUpCredits``), judged on
/// the newest signed version of the transaction (a refund may arrive before the claim).
public struct TopUpPurchase: Sendable {
    private let ledger: CreditLedger
    private let history: SubscriptionHistory
    private let events: EventRecorder?

    public init(ledger: CreditLedger, events: EventRecorder?, logger: Logger) {
        self.ledger = ledger
        self.history = SubscriptionHistory(logger: logger)
        self.events = events
    }

    /// Returns false when the product is not a top-up or no account is known.
    @discardableResult
    public func record(
        _ transaction: TransactionPayload, account: AccountID?, now: Date, cause: EventCause, on connection: PostgresConnection
    ) async throws -> Bool {
        guard ledger.catalogue.topUp(ofProduct: transaction.productId) != nil,
            let account = try await ledger.creditedAccount(ofTopUp: transaction.transactionId, on: connection) ?? account
        else { return false }
        // The newest version is read under the account's lock (taken again below: it is the transaction's already).
        try await ledger.lockAccount(account, on: connection)
        let newest = try await history.newestVersion(of: transaction, on: connection)
        return try await record(
            TopUpCredits.Sale(newest), ledgerKey: transaction.originalTransactionId, account: account, environment: newest.environment ?? .unknown,
            refundReason: newest.revocationReason.map(String.init), now: now, cause: cause, on: connection)
    }

    /// Credits — or takes back — a top-up sale of any store (the App Store's consumable, a Stripe one-time price).
    /// `ledgerKey`: what the sale's ledger rows are read under. Returns false when the product is not a top-up or no
    /// account is known.
    @discardableResult
    public func record(
        _ sale: TopUpCredits.Sale, ledgerKey: String, account: AccountID?, environment: StoreEnvironment, refundReason: String? = nil, now: Date,
        cause: EventCause, on connection: PostgresConnection
    ) async throws -> Bool {
        guard ledger.catalogue.topUp(ofProduct: sale.productId) != nil,
            let account = try await ledger.creditedAccount(ofTopUp: sale.id, on: connection) ?? account
        else { return false }
        try await ledger.lockAccount(account, on: connection)
        let snapshot = try await ledger.snapshot(ofSubscription: ledgerKey, account: account, now: now, on: connection)
        let operations = TopUpCredits.operationsDue(sale, account: account, catalogue: ledger.catalogue, ledger: snapshot)
        try await ledger.apply(operations, at: now, on: connection)
        if let events {
            var drafts = CreditChanges.granted(operations, account: account, subscription: nil, environment: environment, cause: cause)
            if sale.revoked {
                drafts.append(
                    CreditChanges.consumableRefunded(
                        transactionId: sale.id, productId: sale.productId, reason: refundReason, account: account, environment: environment,
                        cause: cause))
            }
            try await events.record(drafts, now: now, on: connection)
        }
        return true
    }
}
