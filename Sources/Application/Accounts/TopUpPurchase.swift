import AppStoreModels
import Credits
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
        try await ledger.lockAccount(account, on: connection)
        let newest = try await history.newestVersion(of: transaction, on: connection)
        let snapshot = try await ledger.snapshot(ofSubscription: transaction.originalTransactionId, account: account, now: now, on: connection)
        let operations = TopUpCredits.operationsDue(newest, account: account, catalogue: ledger.catalogue, ledger: snapshot)
        try await ledger.apply(operations, on: connection)
        if let events {
            let environment = newest.environment?.rawValue ?? "unknown"
            var drafts = CreditChanges.granted(operations, account: account, subscription: nil, environment: environment, cause: cause)
            if newest.revocationDate != nil {
                drafts.append(
                    CreditChanges.consumableRefunded(
                        transactionId: newest.transactionId, productId: newest.productId, reason: newest.revocationReason.map(String.init),
                        account: account, environment: environment, cause: cause))
            }
            try await events.record(drafts, now: now, on: connection)
        }
        return true
    }
}
