import Foundation

/// A receiver of the app's events: where, signed with which secrets, and which types it wants.
public struct WebhookEndpoint: Sendable, Equatable {
    /// Names the endpoint in deliveries, logs and metrics; letters, digits, `-` and `_`.
    public var name: String
    public var url: URL
    /// The first signs; all sign during a rotation (receivers accept any).
    public var secrets: [WebhookSignature.Secret]
    public var types: EventTypeFilter

    public init(name: String, url: URL, secrets: [WebhookSignature.Secret], types: EventTypeFilter = .all) {
        self.name = name
        self.url = url
        self.secrets = secrets
        self.types = types
    }

    public var signature: WebhookSignature { WebhookSignature(secrets: secrets) }
}

/// When a failed delivery is tried again: Standard Webhooks' schedule (as Svix sends) — right away, then after 5 s,
/// 5 min, 30 min, 2 h, 5 h, 10 h and 10 h: eight attempts over 27 h 35 min, after which the delivery is `failed`
/// until an operator redelivers it.
public struct WebhookRetrySchedule: Sendable, Equatable {
    /// Delay before attempt 2, 3, …
    public var delays: [TimeInterval]

    public init(delays: [TimeInterval] = [5, 300, 1_800, 7_200, 18_000, 36_000, 36_000]) { self.delays = delays }

    /// When to try again after `attempts` failed attempts, or `nil` when none is left.
    public func nextAttempt(afterFailedAttempts attempts: Int, at now: Date) -> Date? {
        guard attempts >= 1, attempts <= delays.count else { return nil }
        return now.addingTimeInterval(delays[attempts - 1])
    }

    public var maximumAttempts: Int { delays.count + 1 }
}
