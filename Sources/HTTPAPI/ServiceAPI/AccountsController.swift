import AppStoreModels
import Application
import Credits
import Entitlements
import Foundation
import GooglePlay
import Hummingbird
import Jobs
import Logging
import Persistence
import StatementFencing
import Subscriptions

/// The service API: `GET /v1/accounts/{accountId}/status`, `POST /v1/accounts/{accountId}/purchase-intents` and
/// `GET /v1/subscriptions/{originalTransactionId}`. Status is computed against the injected clock, so access ends at
/// `expiresAt` even if Apple's EXPIRED is lost.
public struct AccountsController: Sendable {
    let accounts: AccountStatusQuery
    let subscriptions: SubscriptionStore
    let purchaseIntents: PurchaseIntents?
    let clock: @Sendable () -> Date
    let databaseTimeout: Duration

    public init(
        accounts: AccountStatusQuery, subscriptions: SubscriptionStore,
        purchaseIntents: PurchaseIntents? = nil,
        clock: @escaping @Sendable () -> Date = { Date() }, databaseTimeout: Duration = .seconds(5)
    ) {
        self.accounts = accounts
        self.subscriptions = subscriptions
        self.purchaseIntents = purchaseIntents
        self.clock = clock
        self.databaseTimeout = databaseTimeout
    }

    public func addRoutes(to group: RouterGroup<StorekeeperRequestContext>) {
        group.get("accounts/{accountId}/status") { _, context in
            try await self.status(context: context)
        }
        if let purchaseIntents {
            group.post("accounts/{accountId}/purchase-intents") { _, context -> EditedResponse<PurchaseIntentResponse> in
                let account = try Self.accountId(context)
                let token = try await read { try await purchaseIntents.issue(for: account) }
                return EditedResponse(
                    status: .created, response: PurchaseIntentResponse(accountId: account.text, appAccountToken: token.lowercasedText))
            }
        }
        group.get("subscriptions/{originalTransactionId}") { _, context in
            try await self.subscription(context: context)
        }
        group.get("stores/{store}/subscriptions/{subscriptionId}") { _, context in
            try await self.storeSubscription(context: context)
        }
    }

    func status(context: StorekeeperRequestContext) async throws -> AccountStatusResponse {
        try await status(of: try Self.accountId(context))
    }

    /// The `{accountId}` path parameter.
    static func accountId(_ context: StorekeeperRequestContext) throws -> AccountID {
        let text = try context.parameters.require("accountId")
        guard let decoded = text.pathDecoded, let accountId = AccountID(decoded) else {
            throw APIError.badRequest("accountId must be the app's account id: \(AccountID.rule)")
        }
        return accountId
    }

    /// The status of one account at the clock's now.
    func status(of accountId: AccountID) async throws -> AccountStatusResponse {
        let now = clock()
        // A cached answer involves no database, so no deadline (a task and a timer per read) to bound it.
        if let cached = accounts.cachedDocument(of: accountId, now: now) { return cached }
        return try await read { try await accounts.document(of: accountId, now: now) }
    }

    func subscription(context: StorekeeperRequestContext) async throws -> SubscriptionDetailResponse {
        let originalTransactionId = try context.parameters.require("originalTransactionId")
        guard originalTransactionId.isKey(maximumBytes: ContentLimits.identifierBytes) else {
            throw APIError.badRequest("originalTransactionId must be 1–\(ContentLimits.identifierBytes) printable bytes")
        }
        guard let state = try await read({ try await subscriptions.subscription(originalTransactionId) }) else {
            throw APIError(.notFound, code: .notFound, message: "no subscription \(originalTransactionId)")
        }
        return SubscriptionDetailResponse(state: state, now: clock())
    }

    /// `GET /v1/stores/{store}/subscriptions/{subscriptionId}`: any store's subscription by the store's own id — the
    /// App Store's `originalTransactionId`, Stripe's `sub_…`, the first purchase token of a Play subscription.
    func storeSubscription(context: StorekeeperRequestContext) async throws -> SubscriptionDetailResponse {
        let storeText = try context.parameters.require("store")
        let store = Store(storeText)
        guard [.appStore, .stripe, .googlePlay].contains(store) else {
            throw APIError.badRequest("store must be one of app_store, stripe, google_play")
        }
        let id = try context.parameters.require("subscriptionId")
        // A Play subscription's id is a purchase token: up to the intake's limit for one.
        guard let decoded = id.pathDecoded, decoded.isKey(maximumBytes: DeveloperNotification.maximumTokenBytes) else {
            throw APIError.badRequest("subscriptionId must be 1–\(DeveloperNotification.maximumTokenBytes) printable bytes")
        }
        guard let state = try await read({ try await subscriptions.subscription(of: store, id: decoded) }) else {
            throw APIError(.notFound, code: .notFound, message: "no \(store.text) subscription \(decoded)")
        }
        return SubscriptionDetailResponse(state: state, now: clock())
    }

    private func read<Result: Sendable>(_ operation: @escaping @Sendable () async throws -> Result) async throws -> Result {
        try await withDatabase(timeout: databaseTimeout, operation)
    }
}

/// A token to pass to StoreKit as `appAccountToken` for one purchase of `accountId`.
struct PurchaseIntentResponse: ResponseEncodable {
    var accountId: String
    var appAccountToken: String
}
