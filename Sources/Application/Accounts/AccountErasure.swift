import Foundation
import Logging
import Persistence
import PostgresNIO
import Subscriptions

/// Erases an account's personal data (`POST /admin/accounts/{id}/erase`): in one transaction holding the account's
/// lock, every row accounting needs moves to a pseudonym, the rest is deleted (``ErasedAccounts``), and the id's
/// digest is filed so that facts Apple signs later with the old id go to the pseudonym too. Erasing again changes
/// nothing; an id never seen is still filed, so the customer stays forgotten when their purchases arrive later.
public struct AccountErasure: Sendable {
    /// What an erasure did.
    public struct Outcome: Sendable, Equatable {
        public var pseudonym: AccountID
        /// Erased before: nothing was held under the id any more.
        public var alreadyErased: Bool
        public var counts: ErasedAccounts.Counts
    }

    private let client: PostgresClient
    private let credits: CreditLedger
    private let erased: ErasedAccounts
    private let logger: Logger

    public init(client: PostgresClient, credits: CreditLedger, logger: Logger) {
        self.client = client
        self.credits = credits
        self.erased = ErasedAccounts(logger: logger)
        self.logger = logger
    }

    /// Answers once the database does (`PostgresClient.reachable`).
    public func reachable() async throws { try await client.reachable(logger: logger) }

    public func erase(_ account: AccountID, by operatorName: String, now: Date) async throws -> Outcome {
        let outcome = try await client.withTransaction(logger: logger) { connection -> Outcome in
            try await credits.lockAccount(account, on: connection)
            let before = try await ErasedAccounts.pseudonym(of: account, on: connection, logger: logger)
            let pseudonym = try await erased.tombstone(
                account, pseudonym: before ?? AccountID(UUID().uuidString.lowercased())!, by: operatorName, at: now, on: connection)
            let counts = try await erased.erase(account, as: pseudonym, on: connection)
            // Every process drops what it cached about the id (sql/0012's channel).
            try await connection.query("SELECT pg_notify('storekeeper_account_changed', \(account.text))", logger: logger)
            return Outcome(pseudonym: pseudonym, alreadyErased: before != nil && counts == ErasedAccounts.Counts(), counts: counts)
        }
        logger.notice("account erased", metadata: ["account.pseudonym": "\(outcome.pseudonym)", "again": "\(outcome.alreadyErased)"])
        return outcome
    }
}
