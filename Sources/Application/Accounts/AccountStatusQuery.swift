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
    /// Serves reads outside transactions when given.
    private let cache: AccountStatusCache?

    public init(client: PostgresClient, ledger: CreditLedger, cache: AccountStatusCache? = nil, logger: Logger) {
        self.client = client
        self.ledger = ledger
        self.cache = cache
    }

    /// The account's subscriptions and credits at `now` (read-only: grants that are due count without being
    /// written), from the cache when it holds the account.
    public func status(of account: AccountID, now: Date) async throws -> (subscriptions: [SubscriptionState], credits: AccountCredits) {
        if let cached = cache?.inputs(of: account) { return evaluate(cached, account: account, now: now) }
        let readSince = cache?.beginRead()
        let inputs = try await client.withConnection { try await self.inputs(of: account, now: now, on: $0) }
        if let cache, let readSince { cache.store(inputs, of: account, readSince: readSince) }
        return evaluate(inputs, account: account, now: now)
    }

    /// The account's subscriptions and credits at `now`, read on the caller's connection (inside a transaction: as
    /// that transaction sees them).
    public func status(of account: AccountID, now: Date, on connection: PostgresConnection) async throws
        -> (subscriptions: [SubscriptionState], credits: AccountCredits)
    {
        evaluate(try await inputs(of: account, now: now, on: connection), account: account, now: now)
    }

    /// What the status is computed from: subscriptions, and buckets live at `now` or later.
    func inputs(of account: AccountID, now: Date, on connection: PostgresConnection) async throws -> AccountStatusCache.Inputs {
        try await ledger.statusInputs(of: account, at: now, orLater: true, on: connection)
    }

    /// The status at `now` from its inputs: the buckets live then, and the grants due by then counted as if written.
    func evaluate(_ inputs: AccountStatusCache.Inputs, account: AccountID, now: Date) -> (subscriptions: [SubscriptionState], credits: AccountCredits) {
        let live = inputs.buckets.filter { $0.bucket.isLive(at: now) }
        let catalogue = ledger.catalogue
        let due = AccountCredits.grantsDue(account: account, subscriptions: inputs.subscriptions, catalogue: catalogue, live: live, now: now)
        return (
            inputs.subscriptions,
            AccountCredits.evaluate(subscriptions: inputs.subscriptions, catalogue: catalogue, live: live, pending: due, now: now)
        )
    }

    /// The status document of `GET /v1/accounts/{id}/status`, from the cache when it holds the account.
    public func document(of account: AccountID, now: Date) async throws -> AccountStatusResponse {
        document(try await status(of: account, now: now), account: account, now: now)
    }

    /// The status document from the cache alone: `nil` when the cache does not hold the account.
    public func cachedDocument(of account: AccountID, now: Date) -> AccountStatusResponse? {
        guard let cached = cache?.inputs(of: account) else { return nil }
        return document(evaluate(cached, account: account, now: now), account: account, now: now)
    }

    /// The status document at `now` from inputs read already.
    public func document(from inputs: AccountStatusCache.Inputs, of account: AccountID, now: Date) -> AccountStatusResponse {
        document(evaluate(inputs, account: account, now: now), account: account, now: now)
    }

    /// The status document, read on the caller's connection.
    public func document(of account: AccountID, now: Date, on connection: PostgresConnection) async throws -> AccountStatusResponse {
        document(try await status(of: account, now: now, on: connection), account: account, now: now)
    }

    private func document(
        _ evaluated: (subscriptions: [SubscriptionState], credits: AccountCredits), account: AccountID, now: Date
    ) -> AccountStatusResponse {
        let status = AccountStatus.evaluate(subscriptions: evaluated.subscriptions, hasFreeCredits: evaluated.credits.hasCredits, now: now)
        return AccountStatusResponse(accountId: account, status: status, credits: evaluated.credits, now: now)
    }
}
