import Dispatch

extension Duration {
    /// The duration in whole nanoseconds (what swift-metrics timers record), saturating at `Int64`'s bounds (about 292
    /// years either way) rather than trapping.
    public var nanoseconds: Int64 {
        let (seconds, overflow) = components.seconds.multipliedReportingOverflow(by: 1_000_000_000)
        let (sum, overflowAgain) = seconds.addingReportingOverflow(components.attoseconds / 1_000_000_000)
        return overflow || overflowAgain ? (components.seconds < 0 ? .min : .max) : sum
    }

    /// The duration for a dispatch timer (nanoseconds, clamped to `Int`).
    var dispatchInterval: DispatchTimeInterval { .nanoseconds(Int(clamping: nanoseconds)) }
}
