extension Duration {
    /// The duration in whole nanoseconds (what swift-metrics timers record).
    public var nanoseconds: Int64 { components.seconds * 1_000_000_000 + components.attoseconds / 1_000_000_000 }
}
