import Foundation

/// When a failed attempt runs again: exponential backoff with ±50 % jitter, capped.
public struct RetryPolicy: Sendable {
    public var base: TimeInterval
    public var cap: TimeInterval

    public init(base: TimeInterval = 1, cap: TimeInterval = 3600) {
        self.base = base
        self.cap = cap
    }

    /// The delay before the attempt after `attempt` (1-based).
    public func delay(afterAttempt attempt: Int) -> TimeInterval {
        let exponential = min(cap, base * pow(2, Double(min(attempt, 30))))
        return exponential * Double.random(in: 0.5...1.5)
    }
}
