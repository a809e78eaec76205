import Foundation
import Logging
import PostgresNIO
import StatementFencing
import Subscriptions

/// The promotional-offer signatures handed out (`offer_signatures`), on the caller's connection.
public struct OfferSignatures: Sendable {
    let logger: Logger

    public init(logger: Logger) { self.logger = logger }

    /// Takes the account's transaction-scoped lock (the one applies and spends take): the check of
    /// ``wasSigned(_:for:on:)`` and the ``record(_:productId:nonce:for:at:on:)`` after it are then one step.
    public func lockAccount(_ account: AccountID, on connection: PostgresConnection) async throws {
        _ = try await connection.run(PreparedQuery<CreditLedger.AccountLock>(CreditLedger.lockKey(account)), logger: logger)
    }

    /// Whether `account` was given a signature for `offerId` before.
    public func wasSigned(_ offerId: String, for account: AccountID, on connection: PostgresConnection) async throws -> Bool {
        let rows = try await connection.query(
            "SELECT 1 FROM offer_signatures WHERE account_id = \(account) AND offer_id = \(offerId) LIMIT 1", logger: logger)
        for try await _ in rows { return true }
        return false
    }

    /// Records a signature handed to `account`.
    public func record(
        _ offerId: String, productId: String, nonce: UUID, for account: AccountID, at now: Date, on connection: PostgresConnection
    ) async throws {
        try await connection.query(
            """
            INSERT INTO offer_signatures (account_id, offer_id, product_id, nonce, signed_at)
            VALUES (\(account), \(offerId), \(productId), \(nonce), \(now))
            """, logger: logger)
    }
}
