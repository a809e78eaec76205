import Foundation
import Hummingbird
import Logging
import Persistence
import Subscriptions

/// Reads subscriptions for the service API (the seam tests can replace).
public protocol SubscriptionReading: Sendable {
    func subscriptions(forAccount accountId: UUID) async throws -> [SubscriptionState]
    func subscription(_ originalTransactionId: String) async throws -> SubscriptionState?
}

extension SubscriptionStore: SubscriptionReading {}

/// The service API: `GET /v1/accounts/{accountId}/status` and `GET /v1/subscriptions/{originalTransactionId}`.
/// Status is computed against the injected clock, so access ends at `expiresAt` even if Apple's EXPIRED is lost.
public struct AccountsController: Sendable {
    let subscriptions: any SubscriptionReading
    let clock: @Sendable () -> Date
    let databaseTimeout: Duration

    public init(
        subscriptions: any SubscriptionReading, clock: @escaping @Sendable () -> Date = { Date() },
        databaseTimeout: Duration = .seconds(5)
    ) {
        self.subscriptions = subscriptions
        self.clock = clock
        self.databaseTimeout = databaseTimeout
    }

    public func addRoutes(to group: RouterGroup<StorekeeperRequestContext>) {
        group.get("accounts/{accountId}/status") { _, context in
            try await self.status(context: context)
        }
        group.get("subscriptions/{originalTransactionId}") { _, context in
            try await self.subscription(context: context)
        }
    }

    func status(context: StorekeeperRequestContext) async throws -> AccountStatusResponse {
        try await status(of: try Self.accountId(context))
    }

    /// The `{accountId}` path parameter.
    static func accountId(_ context: StorekeeperRequestContext) throws -> UUID {
        let text = try context.parameters.require("accountId")
        guard let accountId = UUID(uuidString: text) else {
            throw APIError.badRequest("accountId must be a UUID (the appAccountToken)")
        }
        return accountId
    }

    /// The status of one account at the clock's now.
    func status(of accountId: UUID) async throws -> AccountStatusResponse {
        let states = try await read { try await subscriptions.subscriptions(forAccount: accountId) }
        let now = clock()
        let status = AccountStatus.evaluate(subscriptions: states, hasFreeCredits: false, now: now)
        return AccountStatusResponse(accountId: accountId, status: status, now: now)
    }

    func subscription(context: StorekeeperRequestContext) async throws -> SubscriptionDetailResponse {
        let originalTransactionId = try context.parameters.require("originalTransactionId")
        guard let state = try await read({ try await subscriptions.subscription(originalTransactionId) }) else {
            throw APIError(.notFound, code: "not_found", message: "no subscription \(originalTransactionId)")
        }
        return SubscriptionDetailResponse(state: state, now: clock())
    }

    private func read<Result: Sendable>(_ operation: @escaping @Sendable () async throws -> Result) async throws -> Result {
        do {
            return try await withDeadline(databaseTimeout, operation)
        } catch {
            throw APIError.unavailable("the database is unavailable; retry later")
        }
    }
}
