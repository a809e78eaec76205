import AppStoreModels
import Credits
import Entitlements
import Events
import Foundation
import Logging
import Persistence
import PostgresNIO
import Subscriptions

/// App Store one-time purchases the catalogue sells as a tier — lifetime unlocks (non-consumables) and passes
/// (non-renewing subscriptions) — inside the caller's transaction: a `ONE_TIME_CHARGE` or a claim stores the purchase
/// for the account its token or claim names, a `REFUND` or `REVOKE` ends it, a `REFUND_REVERSED` restores it. The
/// newest signed version is kept whatever the delivery order (``EntitlementRecord/newest(_:_:)``), and the purchase
/// stays with the first account named. Then it is settled (``SourceSettlement``).
public struct OneTimePurchases: Sendable {
    private let credits: CreditLedger
    private let sources: EntitlementSources
    private let settlement: SourceSettlement

    public init(credits: CreditLedger, settlement: SourceSettlement, logger: Logger) {
        self.credits = credits
        self.sources = EntitlementSources(logger: logger)
        self.settlement = settlement
    }

    /// Whether the catalogue sells `productId` as a lifetime unlock or a non-renewing pass.
    public func sells(_ productId: String) -> Bool {
        switch credits.catalogue.tier(ofProduct: productId)?.product.type {
        case .lifetime?, .nonRenewing?: return true
        default: return false
        }
    }

    /// Stores a signed version of a one-time purchase for `account` (when it has none yet) and settles it: the account
    /// it belongs to, `nil` when none is known yet (it waits for a claim). Not a product the catalogue sells this way:
    /// nothing happens, `nil`.
    @discardableResult
    public func record(
        _ transaction: TransactionPayload, notificationType: String?, signedDate: Int64?, account: AccountID?, now: Date, cause: EventCause,
        on connection: PostgresConnection
    ) async throws -> AccountID? {
        guard sells(transaction.productId) else { return nil }
        let version = EntitlementRecord(appStorePurchase: transaction, notificationType: notificationType, signedDate: signedDate)
        return try await record(version, account: account, now: now, cause: cause, on: connection)
    }

    /// Stores a version of a one-time purchase of any store (the App Store's, a Stripe payment) and settles it, as
    /// above.
    @discardableResult
    public func record(
        _ version: EntitlementRecord, account: AccountID?, now: Date, cause: EventCause, on connection: PostgresConnection
    ) async throws -> AccountID? {
        guard let productId = version.productId, sells(productId) else { return nil }
        // The account's lock first, as every credit change takes it: the owner already recorded, else the one named.
        let owner = try await sources.source(version.id, on: connection)?.account ?? account
        if let owner { try await credits.lockAccount(owner, on: connection) }
        let (record, stored) = try await sources.savePurchase(version, account: owner, on: connection)
        guard let stored else { return nil }
        try await settlement.settle(record, account: stored, now: now, cause: cause, on: connection)
        return stored
    }

    /// The account a purchase belongs to, if it is stored and claimed.
    public func owner(of transactionId: String, on connection: PostgresConnection) async throws -> AccountID? {
        try await sources.source(transactionId, on: connection)?.account
    }
}
