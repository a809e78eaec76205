import AppStoreModels
import Foundation
import Subscriptions

/// One scenario file: events Apple (or the app) sends, in the order they happened, and what a customer must see
/// afterwards. Times are days after 2026-01-01T00:00:00Z.
public struct Scenario: Decodable, Sendable {
    public var name: String
    /// Where the expectation comes from (Apple's documentation, the product contract).
    public var source: String
    public var events: [Event]
    public var expect: Expectation
    /// Keeps scenarios that share a database apart: subscriptions, transactions and accounts get their own ids.
    public var namespace = 0
    /// The app the events are signed for.
    public var bundleId = "com.example.scenarios"
    /// The catalogue's `upgrade_credits` (`prorate` when absent).
    public var upgradeCredits: String?

    enum CodingKeys: String, CodingKey { case name, source, events, expect, upgradeCredits }

    /// The scenario files (`Tests/ScenarioTests/Scenarios/*.json`), by name.
    public static let directory = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("ScenarioTests/Scenarios")

    public static var files: [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? []).filter { $0.hasSuffix(".json") }.sorted()
    }

    public static func load(_ file: String) throws -> Scenario {
        try JSONDecoder().decode(Scenario.self, from: Data(contentsOf: directory.appendingPathComponent(file)))
    }

    public struct Event: Decodable, Sendable {
        /// `TYPE` or `TYPE/SUBTYPE` of a notification.
        public var notification: String?
        /// The account alias that posted the transaction (a claim).
        public var claim: String?
        /// A Server API snapshot with this status.
        public var api: Int32?
        public var at: Double
        public var status: Int32?
        public var env: String?
        public var tx: Transaction
        public var renewal: Renewal?
    }

    public struct Transaction: Decodable, Sendable {
        public var id: String
        public var subscription: String?
        public var product: String
        public var from: Double
        public var to: Double?
        /// `webOrderLineItemId`; restored copies share it.
        public var period: String?
        public var price: Int64?
        public var offerType: Int32?
        public var offerDiscount: String?
        public var offerPeriod: String?
        public var revoked: Double?
        public var revocationType: String?
        public var percentage: Int32?
        public var upgraded: Bool?
        public var token: String?
        public var ownership: String?
        public var type: String?
        public var quantity: Int32?
        /// When this copy was signed, when not at the event.
        public var signedAt: Double?
        /// `billingPlanType` (`MONTHLY` for a 12-month commitment billed monthly).
        public var plan: String?
        public var commitment: Commitment?
    }

    /// A transaction's `commitmentInfo`: the paid month, of how many, the commitment's end (day) and its price.
    public struct Commitment: Decodable, Sendable {
        public var period: Int32
        public var of: Int32
        public var ends: Double
        public var price: Int64?
    }

    public struct Renewal: Decodable, Sendable {
        public var autoRenew: Int32?
        public var next: String?
        public var retry: Bool?
        public var grace: Double?
        public var intent: Int32?
        public var priceIncrease: Int32?
        /// The renewal info's `commitmentInfo`: whether the commitment renews (`commitmentAutoRenewStatus`), into
        /// which product, at what monthly price.
        public var commitmentRenews: Int32?
        public var commitmentNext: String?
        public var commitmentPrice: Int64?
        public var winBack: [String]?
    }

    public struct Expectation: Decodable, Sendable {
        public var at: Double
        public var account: String
        public var state: String
        public var entitled: Bool
        public var tier: String?
        public var product: String?
        public var status: String?
        public var endReason: String?
        public var expiresAt: Double?
        public var willRenew: Bool?
        /// Spendable credits per meter (cycle + top-up + daily).
        public var credits: [String: Int64]
        public var topUp: [String: Int64]?
        /// Accounts that must own nothing.
        public var ownsNothing: [String]?
        /// The kinds of the sources that entitle the account (`subscription`, `lifetime`, `non_renewing`, `grant`).
        public var sources: [String]?
        /// `billed_upfront` or `monthly`.
        public var billingPlan: String?
        public var commitment: ExpectedCommitment?
        public var winBackOfferIds: [String]?
    }

    /// The status's `commitment`: month `period` of `of`, its end (day), and what follows (`renewsTo` absent: none).
    public struct ExpectedCommitment: Decodable, Sendable {
        public var period: Int
        public var of: Int
        public var endsAt: Double
        public var renewsTo: String?
        public var priceAfter: Int64?
    }

    /// Transaction types whose original transaction is the transaction itself.
    static let oneTimeTypes: Set<String> = ["Consumable", "Non-Consumable", "Non-Renewing Subscription"]

    public static let base: Int64 = 1_767_225_600_000

    public static func milliseconds(_ days: Double) -> Int64 { base + Int64((days * 86_400_000).rounded()) }
    public static func date(_ days: Double) -> Date { Date(timeIntervalSince1970: Double(milliseconds(days)) / 1000) }

    public static let accounts: [String: UUID] = [
        "A": UUID(uuidString: "0a000000-0000-4000-8000-00000000000a")!,
        "B": UUID(uuidString: "0b000000-0000-4000-8000-00000000000b")!,
        "C": UUID(uuidString: "0c000000-0000-4000-8000-00000000000c")!,
    ]

    public static func account(_ alias: String) -> AccountID { AccountID(accounts[alias] ?? UUID(uuidString: alias)!) }

    /// An account alias's id in this scenario's namespace.
    public func account(_ alias: String) -> AccountID {
        guard namespace > 0 else { return Self.account(alias) }
        let letter = alias.unicodeScalars.first.map { Int($0.value) } ?? 0
        return AccountID(UUID(uuidString: String(format: "%08x-0000-4000-8000-%012x", namespace, letter))!)
    }

    public func subscription(_ id: String?) -> String { namespace > 0 ? "\(namespace)0\(id ?? "1000")" : id ?? "1000" }
    public func transactionId(_ id: String) -> String { namespace > 0 ? "\(namespace)-\(id)" : id }

    public func payload(_ event: Event) -> TransactionPayload {
        let tx = event.tx
        let environment = AppStoreEnvironment(rawValue: event.env ?? "Sandbox")
        var transaction = TransactionPayload(
            transactionId: transactionId(tx.id),
            originalTransactionId: tx.type.map(Self.oneTimeTypes.contains) == true ? transactionId(tx.id) : subscription(tx.subscription),
            productId: tx.product,
            bundleId: bundleId, environment: environment, signedDate: Self.milliseconds(tx.signedAt ?? event.at))
        transaction.type = tx.type ?? "Auto-Renewable Subscription"
        transaction.purchaseDate = Self.milliseconds(tx.from)
        transaction.originalPurchaseDate = Self.milliseconds(tx.from)
        transaction.expiresDate = tx.to.map(Self.milliseconds)
        transaction.webOrderLineItemId = tx.period.map(transactionId)
        transaction.price = tx.price
        transaction.currency = "USD"
        transaction.offerType = tx.offerType
        transaction.offerDiscountType = tx.offerDiscount
        transaction.offerPeriod = tx.offerPeriod
        transaction.revocationDate = tx.revoked.map(Self.milliseconds)
        transaction.revocationType = tx.revocationType ?? tx.revoked.map { _ in "REFUND_FULL" }
        transaction.revocationPercentage = tx.percentage
        transaction.revocationReason = tx.revoked.map { _ in 0 }
        transaction.isUpgraded = tx.upgraded
        transaction.appAccountToken = tx.token.map { account($0).text }
        transaction.inAppOwnershipType = tx.ownership ?? "PURCHASED"
        transaction.quantity = tx.quantity ?? 1
        transaction.transactionReason = "PURCHASE"
        transaction.billingPlanType = tx.plan
        transaction.commitmentInfo = tx.commitment.map {
            TransactionPayload.CommitmentInfo(
                billingPeriodNumber: $0.period, totalBillingPeriods: $0.of, commitmentExpiresDate: Self.milliseconds($0.ends),
                commitmentPrice: $0.price)
        }
        return transaction
    }

    public func renewalPayload(_ event: Event) -> RenewalInfoPayload? {
        guard let renewal = event.renewal else { return nil }
        var info = RenewalInfoPayload(
            originalTransactionId: subscription(event.tx.subscription), productId: event.tx.product,
            environment: AppStoreEnvironment(rawValue: event.env ?? "Sandbox"), signedDate: Self.milliseconds(event.at))
        info.autoRenewStatus = renewal.autoRenew ?? 1
        info.autoRenewProductId = renewal.next ?? event.tx.product
        info.isInBillingRetryPeriod = renewal.retry
        info.gracePeriodExpiresDate = renewal.grace.map(Self.milliseconds)
        info.expirationIntent = renewal.intent
        info.priceIncreaseStatus = renewal.priceIncrease
        info.appAccountToken = event.tx.token.map { account($0).text }
        info.eligibleWinBackOfferIds = renewal.winBack
        if let renews = renewal.commitmentRenews {
            info.renewalBillingPlanType = event.tx.plan
            info.commitmentInfo = RenewalInfoPayload.CommitmentInfo(
                commitmentAutoRenewProductId: renewal.commitmentNext ?? event.tx.product, commitmentAutoRenewStatus: renews,
                commitmentRenewalBillingPlanType: event.tx.plan, commitmentRenewalDate: event.tx.commitment.map { Self.milliseconds($0.ends) },
                commitmentRenewalPrice: renewal.commitmentPrice ?? event.tx.price)
        }
        return info
    }
}
