import AppStoreModels
import Entitlements
import Foundation

/// One App Store event as Apple would describe it: type, subtype, `data.status` and the transaction / renewal-info
/// snapshot. ``SimulatedEvent/scenario(_:subscription:at:)`` builds the common ones for `storekeeper simulate`,
/// tests and benchmarks.
public struct SimulatedEvent: Sendable {
    public var notificationType: String
    public var subtype: String?
    public var status: Int32?
    public var signedDate: Int64
    public var transaction: TransactionPayload?
    public var renewalInfo: RenewalInfoPayload?
    /// CONSUMPTION_REQUEST's `data.consumptionRequestReason`.
    public var consumptionRequestReason: String?

    public init(
        notificationType: String, subtype: String?, status: Int32?, signedDate: Int64,
        transaction: TransactionPayload?, renewalInfo: RenewalInfoPayload?
    ) {
        self.notificationType = notificationType
        self.subtype = subtype
        self.status = status
        self.signedDate = signedDate
        self.transaction = transaction
        self.renewalInfo = renewalInfo
    }

    /// The subscription a scenario is about.
    public struct Subscription: Sendable {
        public var originalTransactionId: String
        public var productId: String
        public var accountId: UUID?
        public var bundleId: String
        public var environment: AppStoreEnvironment
        /// Length of one billing period, when it is not counted in months.
        public var period: TimeInterval
        /// A billing period of this many calendar months (a year is 12), as Apple bills: a monthly subscription bought
        /// on 31 January renews on 28 or 29 February. Takes precedence over `period`.
        public var months: Int?

        public init(
            originalTransactionId: String, productId: String, accountId: UUID?, bundleId: String,
            environment: AppStoreEnvironment = .sandbox, period: TimeInterval = 30 * 86_400
        ) {
            self.originalTransactionId = originalTransactionId
            self.productId = productId
            self.accountId = accountId
            self.bundleId = bundleId
            self.environment = environment
            self.period = period
        }

        /// Where a period starting at `start` (milliseconds since 1970) ends.
        public func periodEnd(startingAt start: Int64) -> Int64 {
            guard let months else { return start + Int64(period * 1000) }
            return Self.milliseconds(start, plusMonths: months)
        }

        /// Where the period ending at `end` (milliseconds since 1970) started.
        public func periodStart(endingAt end: Int64) -> Int64 {
            guard let months else { return end - Int64(period * 1000) }
            return Self.milliseconds(end, plusMonths: -months)
        }

        /// `milliseconds` moved by whole calendar months in UTC; a day past the month's end is its last day.
        static func milliseconds(_ milliseconds: Int64, plusMonths months: Int) -> Int64 {
            var calendar = Calendar(identifier: .gregorian)
            calendar.timeZone = TimeZone(identifier: "UTC")!
            let date = Date(timeIntervalSince1970: Double(milliseconds) / 1000)
            guard let moved = calendar.date(byAdding: .month, value: months, to: date) else { return milliseconds }
            return Int64((moved.timeIntervalSince1970 * 1000).rounded())
        }
    }

    /// The scenarios `storekeeper simulate` knows.
    public enum Scenario: String, CaseIterable, Sendable {
        case subscribe, renew, cancel, expire
        /// Immediate change to a higher product (`to`): a new transaction and period from now.
        case upgrade
        /// A change to a lower product (`to`) at the next renewal.
        case downgrade
        /// A full refund of the current period.
        case refund
        /// A failed renewal with a grace period of 6 days; `fail` without one (billing retry).
        case grace, fail
        /// Apple collected after a failed renewal: a new period from now.
        case recover
    }

    /// Apple's `CONSUMPTION_REQUEST`: the customer asked for a refund of `transaction`. Apple signs the purchase as it
    /// stands — a subscription's renewal info and status as its last notification had them, so the request changes
    /// nothing of its state — at `signedDate`.
    public static func consumptionRequest(
        transaction: TransactionPayload, renewalInfo: RenewalInfoPayload?, status: Int32?, signedDate: Int64,
        reason: String = "UNINTENDED_PURCHASE"
    ) -> SimulatedEvent {
        var transaction = transaction
        transaction.signedDate = signedDate
        var renewalInfo = renewalInfo
        renewalInfo?.signedDate = signedDate
        var event = SimulatedEvent(
            notificationType: "CONSUMPTION_REQUEST", subtype: nil, status: status, signedDate: signedDate, transaction: transaction,
            renewalInfo: renewalInfo)
        event.consumptionRequestReason = reason
        return event
    }

    /// Builds the notification a scenario produces for `subscription`, signed at `now`.
    ///
    /// - Parameter currentPeriod: the period in force, when known: `renew` starts the next period at its end,
    ///   `cancel` keeps it, `expire` ends it at the earlier of its end and `now`. Without it, periods start at `now`.
    /// - Parameter target: the product `upgrade` and `downgrade` change to.
    public static func scenario(
        _ scenario: Scenario, subscription: Subscription, currentPeriod: DateInterval? = nil, target: String? = nil,
        at now: Date
    ) -> SimulatedEvent {
        let nowMilliseconds = milliseconds(now)
        var periodStart = currentPeriod.map { milliseconds($0.start) } ?? nowMilliseconds
        var periodEnd = currentPeriod.map { milliseconds($0.end) } ?? subscription.periodEnd(startingAt: nowMilliseconds)
        switch scenario {
        case .subscribe, .upgrade, .recover:
            periodStart = nowMilliseconds
            periodEnd = subscription.periodEnd(startingAt: nowMilliseconds)
        case .renew:
            periodStart = currentPeriod.map { milliseconds($0.end) } ?? nowMilliseconds
            periodEnd = subscription.periodEnd(startingAt: periodStart)
        case .cancel, .downgrade, .refund, .grace, .fail:
            break
        case .expire:
            periodEnd = min(periodEnd, nowMilliseconds)
            periodStart = min(periodStart, periodEnd)
        }
        let productId = scenario == .upgrade ? target ?? subscription.productId : subscription.productId
        var transaction = TransactionPayload(
            // One transaction per period: derived from the period's start, so every scenario about a period names it alike.
            transactionId: "\(subscription.originalTransactionId)\(String(format: "%012lld", periodStart % 1_000_000_000_000))",
            originalTransactionId: subscription.originalTransactionId, productId: productId,
            bundleId: subscription.bundleId, environment: subscription.environment, signedDate: nowMilliseconds
        )
        transaction.webOrderLineItemId = "\(subscription.originalTransactionId).\(periodStart)"
        transaction.purchaseDate = periodStart
        transaction.originalPurchaseDate = periodStart
        transaction.expiresDate = periodEnd
        transaction.type = "Auto-Renewable Subscription"
        transaction.inAppOwnershipType = "PURCHASED"
        transaction.appAccountToken = subscription.accountId?.uuidString.lowercased()
        transaction.transactionReason = scenario == .renew || scenario == .recover ? "RENEWAL" : "PURCHASE"
        transaction.quantity = 1
        var renewal = RenewalInfoPayload(
            originalTransactionId: subscription.originalTransactionId, productId: productId,
            environment: subscription.environment, signedDate: nowMilliseconds
        )
        renewal.autoRenewProductId = scenario == .downgrade ? target ?? productId : productId
        renewal.autoRenewStatus = 1
        renewal.renewalDate = transaction.expiresDate
        renewal.recentSubscriptionStartDate = nowMilliseconds

        switch scenario {
        case .subscribe:
            return SimulatedEvent(
                notificationType: "SUBSCRIBED", subtype: "INITIAL_BUY", status: 1, signedDate: nowMilliseconds,
                transaction: transaction, renewalInfo: renewal)
        case .renew:
            return SimulatedEvent(
                notificationType: "DID_RENEW", subtype: nil, status: 1, signedDate: nowMilliseconds,
                transaction: transaction, renewalInfo: renewal)
        case .cancel:
            renewal.autoRenewStatus = 0
            return SimulatedEvent(
                notificationType: "DID_CHANGE_RENEWAL_STATUS", subtype: "AUTO_RENEW_DISABLED", status: 1,
                signedDate: nowMilliseconds, transaction: transaction, renewalInfo: renewal)
        case .expire:
            renewal.autoRenewStatus = 0
            renewal.expirationIntent = 1
            renewal.isInBillingRetryPeriod = false
            return SimulatedEvent(
                notificationType: "EXPIRED", subtype: "VOLUNTARY", status: 2, signedDate: nowMilliseconds,
                transaction: transaction, renewalInfo: renewal)
        case .upgrade, .downgrade:
            return SimulatedEvent(
                notificationType: "DID_CHANGE_RENEWAL_PREF", subtype: scenario == .upgrade ? "UPGRADE" : "DOWNGRADE",
                status: 1, signedDate: nowMilliseconds, transaction: transaction, renewalInfo: renewal)
        case .refund:
            transaction.revocationDate = nowMilliseconds
            transaction.revocationReason = 0
            transaction.revocationType = "REFUND_FULL"
            renewal.autoRenewStatus = 0
            return SimulatedEvent(
                notificationType: "REFUND", subtype: nil, status: 5, signedDate: nowMilliseconds,
                transaction: transaction, renewalInfo: renewal)
        case .grace, .fail:
            renewal.isInBillingRetryPeriod = true
            if scenario == .grace { renewal.gracePeriodExpiresDate = nowMilliseconds + 6 * 86_400_000 }
            return SimulatedEvent(
                notificationType: "DID_FAIL_TO_RENEW", subtype: scenario == .grace ? "GRACE_PERIOD" : nil,
                status: scenario == .grace ? 4 : 3, signedDate: nowMilliseconds, transaction: transaction,
                renewalInfo: renewal)
        case .recover:
            return SimulatedEvent(
                notificationType: "DID_RENEW", subtype: "BILLING_RECOVERY", status: 1, signedDate: nowMilliseconds,
                transaction: transaction, renewalInfo: renewal)
        }
    }

    private static func milliseconds(_ date: Date) -> Int64 { Int64((date.timeIntervalSince1970 * 1000).rounded()) }
}
