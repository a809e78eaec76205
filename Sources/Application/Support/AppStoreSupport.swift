import AppStoreModels
import AppStoreServerAPI
import Entitlements
import Foundation
import Logging
import Persistence
import PostgresNIO
import Subscriptions

/// What support asks Apple about a customer (issue 43): the account behind an order id (Look Up Order ID), a renewal
/// date pushed back after an outage (Extend a Subscription Renewal Date; every active subscriber of a product with
/// Extend Subscription Renewal Dates for All Active Subscribers), and the customer's refunds (Get Refund History).
/// Each request is filed before Apple is asked, with Apple's answer after.
public struct AppStoreSupport: Sendable {
    /// Why support's request was not carried out.
    public enum Refusal: Error, Sendable, Equatable, CustomStringConvertible {
        /// No App Store Server API key is configured.
        case notConfigured
        /// Look Up Order ID finds Production purchases only, and this server accepts no Production notifications.
        case productionOnly
        /// The request is malformed.
        case invalid(String)
        /// The account has no such App Store subscription.
        case noSubscription(String)
        /// No request was filed under that identifier.
        case unknownRequest(String)
        /// Another request (another account's, or a mass extension) was filed under that identifier: Apple's
        /// `requestIdentifier` names one request, so it is never reused for another account.
        case identifierTaken(String)
        /// Apple refused the request (its error code, when it gave one).
        case refusedByApple(String, code: Int64?)
        /// Apple could not be reached, or answered with a server error.
        case appleUnavailable(String)

        public var description: String {
            switch self {
            case .notConfigured: "the App Store Server API is not configured (STOREKEEPER_ASSA_ISSUER_ID, _KEY_ID, _PRIVATE_KEY)"
            case .productionOnly: "Look Up Order ID finds Production purchases only; this server accepts Sandbox notifications only"
            case .invalid(let message), .noSubscription(let message), .appleUnavailable(let message): message
            case .unknownRequest(let identifier): "no renewal extension was requested as \(identifier)"
            case .identifierTaken(let identifier): "requestIdentifier \(identifier) names another request (Apple's identifiers name one request each)"
            case .refusedByApple(let message, let code): code.map { "Apple refused: \(message) (error \($0))" } ?? "Apple refused: \(message)"
            }
        }
    }

    /// The accounts an order id led to, and the purchases Apple listed for it.
    public struct OrderMatches: Sendable, Equatable {
        public var valid: Bool
        public var transactions: [TransactionPayload]
        public var matches: [AccountSearch.Match]
    }

    /// A mass extension asked for, or (dry run) what it would reach.
    public struct MassOutcome: Sendable, Equatable {
        public var dryRun: Bool
        /// The product's App Store subscriptions held here that are paid and active now: Apple's own count, over every
        /// subscriber and storefront filter, comes in its status.
        public var activePaidHere: Int
        public var record: RenewalExtensionRecords.Record?
        /// Whether the request itself could be sent: the App Store Server API is configured.
        public var canAskApple: Bool
    }

    private let client: PostgresClient
    private let apple: AppStoreServerClient?
    private let records: RenewalExtensionRecords
    private let search: AccountSearch
    private let acceptsProduction: Bool
    /// The App Store auto-renewable products of the catalogue: what a mass extension may name.
    private let subscriptionProducts: Set<String>
    private let logger: Logger

    public init(
        client: PostgresClient, apple: AppStoreServerClient?, acceptsProduction: Bool, subscriptionProducts: Set<String>, logger: Logger
    ) {
        self.subscriptionProducts = subscriptionProducts
        self.client = client
        self.apple = apple
        self.records = RenewalExtensionRecords(client: client, logger: logger)
        self.search = AccountSearch(client: client, logger: logger)
        self.acceptsProduction = acceptsProduction
        self.logger = logger
    }

    /// Answers once the database does (`PostgresClient.reachable`).
    public func reachable() async throws { try await client.reachable(logger: logger) }

    /// Whether Apple can be asked at all: the App Store Server API is configured.
    public var asksApple: Bool { apple != nil }

    /// Whether an order id can be looked up here: an API key, and Production accepted.
    public var looksUpOrders: Bool { apple != nil && acceptsProduction }

    /// Why order ids are not looked up here, for the search box.
    public var orderLookupUnavailable: String {
        apple == nil
            ? "Order ids are looked up with Apple's App Store Server API, which is not configured here."
            : "Order ids are looked up in Production only (Look Up Order ID): Sandbox purchases have no order id, and this server accepts Sandbox only."
    }

    // MARK: Order ids

    /// Look Up Order ID: the purchases of an order and the accounts holding their subscriptions.
    public func findOrder(_ orderId: String) async throws -> OrderMatches {
        let apple = try configured()
        guard acceptsProduction else { throw Refusal.productionOnly }
        guard Self.isOrderId(orderId) else { throw Refusal.invalid("an order id is 1–64 letters and digits, as on the App Store's receipt e-mail") }
        let lookup = try await Self.asking { () async throws(AppStoreServerError) in try await apple.lookUpOrder(orderId) }
        var matches: [AccountSearch.Match] = []
        for id in Set(lookup.transactions.map(\.originalTransactionId)).sorted() {
            let found = try await search.matches(id)
            for match in found where !matches.contains(where: { $0.accountId == match.accountId }) {
                matches.append(AccountSearch.Match(accountId: match.accountId, matchedBy: "order_id", source: id))
            }
        }
        return OrderMatches(valid: lookup.valid, transactions: lookup.transactions, matches: matches)
    }

    /// Apple's order ids are short runs of capitals and digits (`MK5TTTVWJH`).
    public static func isOrderId(_ text: String) -> Bool {
        (1...64).contains(text.utf8.count)
            && text.unicodeScalars.allSatisfy { $0.isASCII && ($0.properties.isAlphabetic || ("0"..."9").contains($0)) }
    }

    // MARK: One subscription

    /// Extends one of `account`'s App Store subscriptions (`subscription`, or its only one that is active) through
    /// Apple. A request identifier used before answers with what was filed under it and asks Apple nothing (`asked`
    /// false).
    public func extend(
        account: AccountID, subscription: String?, _ request: RenewalExtensionRequest, requestedBy: String, now: Date
    ) async throws -> (record: RenewalExtensionRecords.Record, asked: Bool) {
        try Self.check(request)
        let apple = try configured()
        if let filed = try await records.record(request.requestIdentifier) {
            guard filed.kind == .single, filed.accountId == account.text else { throw Refusal.identifierTaken(request.requestIdentifier) }
            return (filed, false)
        }
        let target = try await self.subscription(of: account, named: subscription, now: now)
        let environment = target.environment
        let record = RenewalExtensionRecords.Record(
            requestIdentifier: request.requestIdentifier, kind: .single, environment: target.environment, subscription: target.id,
            accountId: account.text, days: request.days, reasonCode: Int(request.reason.rawValue), requestedBy: requestedBy, requestedAt: now)
        guard try await records.file(record) else { throw Refusal.identifierTaken(request.requestIdentifier) }
        let answer: RenewalExtensionAnswer
        do {
            answer = try await apple.extendRenewalDate(request, originalTransactionId: target.id, environment: environment)
        } catch {
            try await records.answer(request.requestIdentifier, succeeded: nil, effectiveDate: nil, error: error.description, at: now)
            throw Self.refusal(error)
        }
        try await records.answer(request.requestIdentifier, succeeded: answer.success, effectiveDate: answer.effectiveDate, error: nil, at: now)
        logger.notice(
            "renewal date extended", metadata: ["subscription.id": "\(target.id)", "days": "\(request.days)", "success": "\(answer.success)"])
        return (try await records.record(request.requestIdentifier) ?? record, true)
    }

    /// The account's renewal extensions, newest first.
    public func extensions(of account: AccountID) async throws -> [RenewalExtensionRecords.Record] {
        try await records.ofAccount(account.text)
    }

    // MARK: Refunds

    /// The customer's refunded App Store purchases as Apple lists them (Get Refund History, asked with each
    /// environment's latest subscription of the account), newest refund first; at most `pages` pages per environment.
    public func refundHistory(of account: AccountID, pages: Int = 10) async throws -> [TransactionPayload] {
        let apple = try configured()
        let subscriptions = try await appStoreSubscriptions(of: account)
        guard !subscriptions.isEmpty else { throw Refusal.noSubscription("\(account.text) has no App Store subscription to ask Apple about") }
        var refunds: [TransactionPayload] = []
        var asked: Set<StoreEnvironment> = []
        for target in subscriptions where asked.insert(target.environment).inserted {
            var revision: String?
            for _ in 0..<pages {
                let page = try await Self.asking { () async throws(AppStoreServerError) in
                    try await apple.refundHistory(
                        transactionId: target.id, revision: revision, environment: target.environment)
                }
                refunds += page.transactions
                revision = page.revision
                guard page.hasMore, revision != nil else { break }
            }
        }
        return refunds.sorted { ($0.revocationDate ?? 0) > ($1.revocationDate ?? 0) }
    }

    // MARK: Every subscriber

    /// Extends every active subscriber of `product` through Apple — or, as a dry run, counts those held here and asks
    /// Apple nothing.
    public func extendAll(
        product: String, storefronts: [String]?, environment: StoreEnvironment, _ request: RenewalExtensionRequest, dryRun: Bool, requestedBy: String,
        now: Date
    ) async throws -> MassOutcome {
        try Self.check(request)
        guard (1...256).contains(product.utf8.count) else { throw Refusal.invalid("productId is 1–256 characters") }
        if let storefronts {
            guard !storefronts.isEmpty, storefronts.count <= 200,
                storefronts.allSatisfy({ $0.utf8.count == 3 && $0.unicodeScalars.allSatisfy { ("A"..."Z").contains($0) } })
            else { throw Refusal.invalid("storefrontCountryCodes are ISO 3166-1 alpha-3 codes such as USA, at most 200") }
        }
        guard subscriptionProducts.contains(product) else {
            throw Refusal.invalid("productId \(product.prefix(64)) is not an App Store subscription product of the catalogue (STOREKEEPER_TIERS)")
        }
        // A dry run asks Apple nothing, so it answers without the API too — and says whether the request could be sent.
        let count = try await records.activePaidSubscriptions(ofProduct: product, environment: environment, now: now)
        guard !dryRun else { return MassOutcome(dryRun: true, activePaidHere: count, record: nil, canAskApple: self.apple != nil) }
        let apple = try configured()
        let record = RenewalExtensionRecords.Record(
            requestIdentifier: request.requestIdentifier, kind: .mass, environment: environment, productId: product, storefronts: storefronts,
            days: request.days, reasonCode: Int(request.reason.rawValue), requestedBy: requestedBy, requestedAt: now)
        guard try await records.file(record) else {
            throw Refusal.identifierTaken(request.requestIdentifier)
        }
        do {
            try await apple.extendRenewalDatesForAll(
                request, productId: product, storefronts: storefronts, environment: environment)
        } catch {
            try await records.progress(
                request.requestIdentifier, complete: false, completeDate: nil, succeededCount: nil, failedCount: nil, error: error.description,
                at: now)
            throw Self.refusal(error)
        }
        logger.notice(
            "mass renewal extension requested",
            metadata: ["product": "\(product)", "days": "\(request.days)", "request": "\(request.requestIdentifier)"])
        return MassOutcome(dryRun: false, activePaidHere: count, record: try await records.record(request.requestIdentifier), canAskApple: true)
    }

    /// A mass extension's status: asked of Apple again unless it is complete, and filed.
    public func massStatus(_ requestIdentifier: String, now: Date) async throws -> RenewalExtensionRecords.Record {
        guard let filed = try await records.record(requestIdentifier), filed.kind == .mass, let product = filed.productId else {
            throw Refusal.unknownRequest(requestIdentifier)
        }
        guard !filed.complete, let apple else { return filed }
        let status: MassExtensionStatus
        do {
            status = try await apple.massExtensionStatus(
                productId: product, requestIdentifier: requestIdentifier, environment: filed.environment)
        } catch {
            // What was filed stands; the failure to ask is said beside it.
            var record = filed
            record.error = error.description
            return record
        }
        try await records.progress(
            requestIdentifier, complete: status.complete, completeDate: status.completeDate, succeededCount: status.succeededCount,
            failedCount: status.failedCount, error: nil, at: now)
        return try await records.record(requestIdentifier) ?? filed
    }

    /// The latest mass extensions.
    public func massExtensions() async throws -> [RenewalExtensionRecords.Record] {
        try await records.mass()
    }

    // MARK: Parts

    struct Target {
        var id: String
        var environment: StoreEnvironment
        var status: String
    }

    private func appStoreSubscriptions(of account: AccountID) async throws -> [Target] {
        try await SubscriptionStore(client: client, logger: logger).appStoreSubscriptions(ofAccount: account).map {
            Target(id: $0.originalTransactionId, environment: $0.environment, status: $0.status)
        }
    }

    private func subscription(of account: AccountID, named id: String?, now: Date) async throws -> Target {
        let held = try await appStoreSubscriptions(of: account)
        if let id {
            guard let target = held.first(where: { $0.id == id }) else {
                throw Refusal.noSubscription("\(account.text) has no App Store subscription \(id)")
            }
            return target
        }
        let active = held.filter { $0.status == "active" }
        guard active.count == 1 else {
            throw active.isEmpty
                ? Refusal.noSubscription("\(account.text) has no active App Store subscription: Apple extends active paid ones only")
                : .invalid("\(account.text) has \(active.count) active App Store subscriptions: name one as subscription")
        }
        return active[0]
    }

    private func configured() throws(Refusal) -> AppStoreServerClient {
        guard let apple else { throw Refusal.notConfigured }
        return apple
    }

    static func check(_ request: RenewalExtensionRequest) throws(Refusal) {
        guard (1...RenewalExtensionRequest.maximumDays).contains(request.days) else { throw Refusal.invalid("days must be 1–90 (Apple's limit)") }
        guard (1...128).contains(request.requestIdentifier.utf8.count),
            request.requestIdentifier.unicodeScalars.allSatisfy({ $0.value > 0x20 && $0.value < 0x7F })
        else {
            throw Refusal.invalid("requestIdentifier is 1–128 printable ASCII characters")
        }
    }

    static func refusal(_ error: AppStoreServerError) -> Refusal {
        switch error.kind {
        case .api where !error.isRetryable: .refusedByApple(error.message, code: error.apiCode)
        case .configuration: .notConfigured
        default: .appleUnavailable("the App Store Server API did not answer: \(error.description)")
        }
    }

    static func asking<Value>(_ body: () async throws(AppStoreServerError) -> Value) async throws(Refusal) -> Value {
        do { return try await body() } catch { throw refusal(error) }
    }
}
