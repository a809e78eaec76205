import Foundation

/// Something applying an event asks the outside world to do or record, beyond storing the new state. Every effect
/// names the Apple transaction it comes from, so recording it twice is harmless.
public enum LifecycleEffect: Hashable, Sendable {
    /// A new paid period began (purchase, renewal, recovery, resubscription, upgrade): grant its cycle credits.
    /// `upgradedFrom` is the period it replaced mid-way (an immediate upgrade or crossgrade).
    case periodStarted(Period, upgradedFrom: Period?)
    /// The period of `transactionId` keeps access until `until` (a renewal extension, a grace period).
    case periodExtended(transactionId: String, until: Date)
    /// The subscription ended: archive it with `reason` (`EXPIRED_VOLUNTARY`, `REFUND`, `REVOKE`, …); refunds and
    /// revocations also remove the period's cycle credits.
    case ended(reason: String, transactionId: String, at: Date?)
    /// A refund of `transactionId` was reversed: its archived end no longer holds and its credits come back.
    case refundReversed(transactionId: String)
    /// An earlier period (`transactionId`) was refunded while a later one runs: access is unchanged; a prorated
    /// refund claws back `milliPercent` of that period's grant.
    case earlierPeriodRefunded(transactionId: String, milliPercent: Int32?)
    /// Apple reported a renewal that did not move the period: ask Apple again after `after`.
    case recheckRenewal(after: Date)

    /// One paid period of a subscription.
    public struct Period: Hashable, Sendable {
        public var originalTransactionId: String
        public var transactionId: String
        public var productId: String
        public var start: Date
        public var end: Date
        /// What the customer paid, in milliunits, when the transaction says.
        public var price: Int64?
        public var isTrial: Bool

        public init(
            originalTransactionId: String, transactionId: String, productId: String, start: Date, end: Date,
            price: Int64?, isTrial: Bool
        ) {
            self.originalTransactionId = originalTransactionId
            self.transactionId = transactionId
            self.productId = productId
            self.start = start
            self.end = end
            self.price = price
            self.isTrial = isTrial
        }
    }
}
