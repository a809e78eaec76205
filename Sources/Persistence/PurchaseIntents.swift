import Foundation
import Logging
import PostgresNIO
import StatementFencing
import Subscriptions

/// The `appAccountToken`s apps asked for (`POST /v1/accounts/{id}/purchase-intents`): an app whose account ids are
/// not UUIDs passes a fresh token to StoreKit for each purchase, and notifications carrying it resolve to the account.
public struct PurchaseIntents: Sendable {
    private let client: PostgresClient?
    private let logger: Logger

    /// - Parameter client: where ``issue(for:)`` writes; the other methods run on the caller's connection.
    public init(client: PostgresClient? = nil, logger: Logger) {
        self.client = client
        self.logger = logger
    }

    /// A fresh token for a purchase by `account`.
    public func issue(for account: AccountID) async throws -> UUID {
        guard let client else { throw PersistenceError(.corruptRecord, "purchase intents were built without a database client") }
        let token = UUID()
        try await client.query("INSERT INTO purchase_intents (token, account_id) VALUES (\(token), \(account))", logger: logger)
        return token
    }

    /// The accounts of those of `tokens` an app asked for (lowercased token → account); other tokens are not listed.
    public func accounts(ofTokens tokens: [String], on connection: PostgresConnection) async throws -> [String: AccountID] {
        let uuids = Set(tokens.compactMap(UUID.init(uuidString:)))
        guard !uuids.isEmpty else { return [:] }
        let rows = try await connection.run(PreparedQuery<IntendedAccounts>(Array(uuids)), logger: logger)
        var accounts: [String: AccountID] = [:]
        for row in rows {
            let (token, account) = try row.decode((UUID, AccountID).self)
            accounts[token.uuidString.lowercased()] = account
        }
        return accounts
    }

    /// The accounts of tokens `$1` (every apply asks).
    enum IntendedAccounts: PreparedSQL {
        static let sql = "SELECT token, account_id FROM purchase_intents WHERE token = ANY($1::uuid[])"
    }

    /// The account a token names: the one that asked for it, else the token itself as a UUID account.
    public func account(ofToken token: String?, on connection: PostgresConnection) async throws -> AccountID? {
        guard let token else { return nil }
        return try await accounts(ofTokens: [token], on: connection)[token.lowercased()] ?? AccountID(token)
    }
}
