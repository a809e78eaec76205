import Credits
import Foundation
import Logging
import Persistence
import PostgresNIO
import Subscriptions

/// An account's status (the service API, the dashboard and `accounts show`): its subscriptions and credits at an
/// instant, read on one connection. Looking never writes: grants that are due count without being written.
public struct AccountStatusQuery: Sendable {
    private let client: PostgresClient
    private let ledger: CreditLedger
    private let subscriptions: SubscriptionStore

    public init(client: PostgresClient, ledger: CreditLedger, logger: Logger) {
        self.client = client
        self.ledger = ledger
        self.subscriptions = SubscriptionStore(client: client, logger: logger)
    }

    /// The account's subscriptions and credits at `now` (read-only: grants that are due count without being
    /// written).
    public func status(of account: AccountID, now: Date) async throws -> (subscriptions: [SubscriptionState], credits: AccountCredits) {
        try await client.withConnection { try await status(of: account, now: now, on: $0) }
    }

    /// The account's subscriptions and credits at `now`, read on the caller's connection (inside a transaction: as
    /// that transaction sees them).
    public func status(of account: AccountID, now: Date, on connection: PostgresConnection) async throws
        -> (subscriptions: [SubscriptionState], credits: AccountCredits)
    {
        let states = try await subscriptions.subscriptions(forAccount: account, on: connection)
        return (states, try await ledger.credits(of: account, subscriptions: states, now: now, materialize: false, on: connection))
    }

    /// The status document of `GET /v1/accounts/{id}/status` and of events.
    public func document(of account: AccountID, now: Date) async throws -> AccountStatusResponse {
        try await client.withConnection { try await document(of: account, now: now, on: $0) }
    }

    /// The status document, read on the caller's connection.
    public func document(of account: AccountID, now: Date, on connection: PostgresConnection) async throws -> AccountStatusResponse {
        let (states, credits) = try await status(of: account, now: now, on: connection)
        let status = AccountStatus.evaluate(subscriptions: states, hasFreeCredits: credits.hasCredits, now: now)
        return AccountStatusResponse(accountId: account, status: status, credits: credits, now: now)
    }
}
