import Foundation
import Hummingbird

/// The rest of Play's subscription lifecycle (the Play Billing documentation's "Subscription lifecycle"), each command
/// changing the token as Google would and answering the DeveloperNotification Play would publish for it.
extension FakeGooglePlay {
    /// A cancelled subscription is resubscribed before it expires (`SUBSCRIPTION_RESTARTED`, 7).
    public func restore(_ token: String, at now: Date) throws -> [String: Any] {
        try change(token) { subscription in
            subscription.autoRenew = true
            subscription.state = "SUBSCRIPTION_STATE_ACTIVE"
            subscription.cancellation = nil
        }
        return notify(token, type: 7, at: now)
    }

    /// A renewal's payment fails with a grace period: access goes on until the grace period ends, which becomes the
    /// line item's expiry (`SUBSCRIPTION_IN_GRACE_PERIOD`, 6).
    public func grace(_ token: String, days: Int = 7, at now: Date) throws -> [String: Any] {
        try change(token) { subscription in
            subscription.state = "SUBSCRIPTION_STATE_IN_GRACE_PERIOD"
            subscription.expiryTime = max(subscription.expiryTime, now).addingTimeInterval(Double(days) * 86_400)
        }
        return notify(token, type: 6, at: now)
    }

    /// The payment still fails: the account hold, no access, the expiry in the past (`SUBSCRIPTION_ON_HOLD`, 5).
    public func hold(_ token: String, at now: Date) throws -> [String: Any] {
        try change(token) { subscription in
            subscription.state = "SUBSCRIPTION_STATE_ON_HOLD"
            subscription.expiryTime = min(subscription.expiryTime, now)
        }
        return notify(token, type: 5, at: now)
    }

    /// The payment goes through at last (from grace or hold): a new order, a new period from now
    /// (`SUBSCRIPTION_RECOVERED`, 1).
    public func recover(_ token: String, at now: Date) throws -> [String: Any] {
        try change(token) { subscription in
            subscription.renewals += 1
            subscription.state = "SUBSCRIPTION_STATE_ACTIVE"
            subscription.expiryTime = subscription.periodEnd(after: now)
        }
        return notify(token, type: 1, at: now)
    }

    /// The customer's pause takes effect: no access until it resumes (`SUBSCRIPTION_PAUSED`, 10).
    public func pause(_ token: String, at now: Date) throws -> [String: Any] {
        try change(token) { subscription in
            subscription.state = "SUBSCRIPTION_STATE_PAUSED"
            subscription.expiryTime = min(subscription.expiryTime, now)
        }
        return notify(token, type: 10, at: now)
    }

    /// A paused subscription resumes and is charged: a new order, a new period (`SUBSCRIPTION_RENEWED`, 2).
    public func resume(_ token: String, at now: Date) throws -> [String: Any] {
        _ = try recover(token, at: now)
        return notify(token, type: 2, at: now)
    }

    /// The developer (or Google) revokes the subscription: access ends now (`SUBSCRIPTION_REVOKED`, 12).
    public func revoke(_ token: String, at now: Date) throws -> [String: Any] {
        _ = try change(token) { $0.endNow(now) }
        return notify(token, type: 12, at: now)
    }

    /// The token's line item expiry now.
    public func expiry(of token: String) -> Date? { state.withLock { $0.subscriptions[token]?.expiryTime } }

    /// How many times `purchases.subscriptions.acknowledge` was called for `token` (repeats included).
    public func acknowledgements(of token: String) -> Int { state.withLock { $0.acknowledgements[token] ?? 0 } }

    /// `purchases.subscriptions.acknowledge`: the token's product must be `productId`; acknowledging again is allowed.
    func acknowledge(_ token: String, productId: String) -> Response {
        state.withLock { state in
            guard var subscription = state.subscriptions[token], subscription.productId == productId else {
                return Self.error(404, "NOT_FOUND", "The purchase token was not found.")
            }
            subscription.acknowledged = true
            state.subscriptions[token] = subscription
            state.acknowledgements[token, default: 0] += 1
            return Self.json(Array("{}".utf8))
        }
    }
}
