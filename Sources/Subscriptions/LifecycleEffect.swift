import Foundation

/// Something applying an event asks the outside world to do or record, beyond storing the new state. Every effect
/// names the Apple transaction it comes from, so recording it twice is harmless.
public enum LifecycleEffect: Hashable, Sendable {
    /// The subscription ended: archive it with `reason` (`EXPIRED_VOLUNTARY`, `REFUND`, `REVOKE`, …).
    case ended(reason: String, transactionId: String, at: Date?)
    /// A refund of `transactionId` was reversed: its archived end no longer holds.
    case refundReversed(transactionId: String)
    /// An earlier period (`transactionId`) was refunded while a later one runs: access is unchanged.
    case earlierPeriodRefunded(transactionId: String)
    /// Apple reported a renewal that did not move the period: ask Apple again after `after`.
    case recheckRenewal(after: Date)
}
