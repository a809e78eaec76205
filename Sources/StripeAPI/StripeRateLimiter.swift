/// Paces a process's Stripe requests to a rate: Stripe allows 100 requests a second per account in live mode (25 in
/// test mode) and 25 a second per endpoint, and answers 429 beyond — a burst of events (the month's renewals, a
/// `stripe sync`) would otherwise spend its retries on refusals. Requests are spaced evenly; each waits its turn.
public actor StripeRateLimiter {
    private let interval: Duration
    private var next = ContinuousClock.now

    /// - Parameter requestsPerSecond: at least 1.
    public init(requestsPerSecond: Int) {
        interval = .nanoseconds(1_000_000_000 / Int64(max(requestsPerSecond, 1)))
    }

    /// Waits for this request's turn.
    public func acquire() async {
        let now = ContinuousClock.now
        let turn = reserve(at: now)
        if turn > now { try? await Task.sleep(until: turn, clock: .continuous) }
    }

    /// The turn of a request asked for at `now`: now, or one interval after the previous turn.
    public func reserve(at now: ContinuousClock.Instant) -> ContinuousClock.Instant {
        let turn = max(next, now)
        next = turn + interval
        return turn
    }
}
