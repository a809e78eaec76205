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
        try await client.withConnection { connection in
            let states = try await subscriptions.subscriptions(forAccount: account, on: connection)
            return (states, try await ledger.credits(of: account, subscriptions: states, now: now, materialize: false, on: connection))
        }
    }
}
