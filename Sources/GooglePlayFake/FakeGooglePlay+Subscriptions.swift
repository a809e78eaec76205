import Foundation

/// Play's subscriptions as the fake holds them: each purchase token with its line item, state and orders, changed by
/// the commands a customer's actions (and Google's billing) would cause. Each command answers the
/// DeveloperNotification Play would publish for it.
extension FakeGooglePlay {
    /// One purchase token of a subscription.
    struct SubscriptionToken: Sendable {
        var productId: String
        var basePlanId: String
        var state: String
        var startTime: Date
        var expiryTime: Date
        var period: TimeInterval
        /// Calendar months of a period (UTC), when the plan's period is counted in months as Play's base plans are.
        var months: Int
        /// `GPA.` order id of the first payment; renewals add `..N`.
        var orderBase: String
        var renewals: Int
        var autoRenew: Bool
        var linkedPurchaseToken: String?
        var accountToken: String?
        /// Bought again in the Play Store after this token expired, and the account id that one named
        /// (`outOfAppPurchaseContext`).
        var expiredPurchase: (token: String, accountToken: String?)?
        var acknowledged: Bool
        var trial: Bool
        var priceMicros: Int64
        var currency: String
        /// Who ended it and when, as `canceledStateContext` says while the token is CANCELED or EXPIRED:
        /// `userInitiatedCancellation` (the customer turned auto-renew off), `systemInitiatedCancellation` (Google gave
        /// up collecting), `developerInitiatedCancellation` (revoked or refunded), `replacementCancellation` (replaced
        /// by another plan's token).
        var cancellation: (kind: String, at: Date)? = nil

        var latestOrderId: String { renewals == 0 ? orderBase : "\(orderBase)..\(renewals - 1)" }

        /// Revoked (by the developer, or a refund that revokes): access ends `now`, and nothing renews.
        mutating func endNow(_ now: Date) {
            cancellation = cancellation ?? ("developerInitiatedCancellation", now)
            autoRenew = false
            state = "SUBSCRIPTION_STATE_EXPIRED"
            expiryTime = min(expiryTime, now)
        }

        /// One period after `date`.
        func periodEnd(after date: Date) -> Date {
            guard months > 0 else { return date.addingTimeInterval(period) }
            var calendar = Calendar(identifier: .gregorian)
            calendar.timeZone = TimeZone(identifier: "UTC")!
            return calendar.date(byAdding: .month, value: months, to: date) ?? date.addingTimeInterval(period)
        }
    }

    /// What a customer buys: a base plan of a subscription product.
    public struct Plan: Sendable {
        public var productId: String
        public var basePlanId: String
        public var period: TimeInterval
        /// Calendar months of a period, as Play counts `P1M`, `P1Y` (0: the period is `period` seconds).
        public var months: Int
        public var priceMicros: Int64
        public var currency: String

        public init(
            productId: String, basePlanId: String, period: TimeInterval = 30 * 86_400, months: Int = 0, priceMicros: Int64 = 9_990_000,
            currency: String = "USD"
        ) {
            self.productId = productId
            self.basePlanId = basePlanId
            self.period = period
            self.months = months
            self.priceMicros = priceMicros
            self.currency = currency
        }
    }

    /// A new subscription: a fresh token, active for one period (or a trial of `trialDays`), not yet acknowledged.
    public func buy(_ plan: Plan, accountToken: String?, at now: Date, trialDays: Int = 0, linkedTo previous: String? = nil) -> (
        token: String, notification: [String: Any]
    ) {
        let token = state.withLock { state -> String in
            state.nextToken += 1
            // A fresh fake per run (`dev --fake-play` restarted on a database that outlives it) must not sell a token or
            // an order id an earlier one did: each carries the fake's own random part.
            let token = "fake-play-token-\(state.nextToken)-\(runId)-" + String(repeating: "x", count: 72)
            state.nextOrder += 1
            let order = String(format: "GPA.3300-%04d-%04d-%05d", state.nextOrder % 10_000, runNumber % 10_000, state.nextOrder)
            state.subscriptions[token] = SubscriptionToken(
                productId: plan.productId, basePlanId: plan.basePlanId, state: "SUBSCRIPTION_STATE_ACTIVE", startTime: now,
                expiryTime: now, period: plan.period, months: plan.months,
                orderBase: order, renewals: 0, autoRenew: true, linkedPurchaseToken: previous, accountToken: accountToken,
                acknowledged: false, trial: trialDays > 0, priceMicros: plan.priceMicros, currency: plan.currency)
            state.subscriptions[token]!.expiryTime =
                trialDays > 0 ? now.addingTimeInterval(Double(trialDays) * 86_400) : state.subscriptions[token]!.periodEnd(after: now)
            return token
        }
        return (token, notify(token, type: 4, at: now))
    }

    /// The customer subscribes again from the Play Store's subscription centre after `expired` ended: a new token
    /// with no `linkedPurchaseToken` and no account identifiers of its own (the app's purchase flow, which sets them,
    /// did not run), linked to the expired purchase by `outOfAppPurchaseContext` (2025-11-19).
    public func resubscribeInStore(_ expired: String, with plan: Plan, at now: Date) throws -> (token: String, notification: [String: Any]) {
        guard let old = state.withLock({ $0.subscriptions[expired] }), old.state == "SUBSCRIPTION_STATE_EXPIRED" else {
            throw ControlRefusal("\(expired) has not expired")
        }
        let bought = buy(plan, accountToken: nil, at: now)
        state.withLock { $0.subscriptions[bought.token]?.expiredPurchase = (expired, old.accountToken) }
        return bought
    }

    /// The next period is paid: a new order id, the expiry one period later.
    public func renew(_ token: String, at now: Date) throws -> [String: Any] {
        try change(token) { subscription in
            subscription.renewals += 1
            subscription.trial = false
            subscription.state = "SUBSCRIPTION_STATE_ACTIVE"
            subscription.expiryTime = subscription.periodEnd(after: max(subscription.expiryTime, now))
        }
        return notify(token, type: 2, at: now)
    }

    /// The customer turns auto-renew off: access lasts until the expiry.
    public func cancel(_ token: String, at now: Date) throws -> [String: Any] {
        try change(token) { subscription in
            subscription.autoRenew = false
            subscription.state = "SUBSCRIPTION_STATE_CANCELED"
            subscription.cancellation = ("userInitiatedCancellation", now)
        }
        return notify(token, type: 3, at: now)
    }

    /// The period ends without renewal: as the customer cancelled it, or — auto-renew still on (a failed payment, in
    /// grace, on hold or neither) — as Google gave up collecting (`systemInitiatedCancellation`).
    public func expire(_ token: String, at now: Date) throws -> [String: Any] {
        try change(token) { subscription in
            subscription.cancellation =
                subscription.cancellation ?? (subscription.autoRenew ? "systemInitiatedCancellation" : "userInitiatedCancellation", now)
            subscription.autoRenew = false
            subscription.state = "SUBSCRIPTION_STATE_EXPIRED"
            subscription.expiryTime = min(subscription.expiryTime, now)
        }
        return notify(token, type: 13, at: now)
    }

    /// The customer moves to another plan now: a new token linked to the old one, whose own state becomes expired.
    public func replace(_ token: String, with plan: Plan, at now: Date) throws -> (token: String, notification: [String: Any]) {
        let account = try change(token) { subscription in
            subscription.cancellation = ("replacementCancellation", now)
            subscription.autoRenew = false
            subscription.state = "SUBSCRIPTION_STATE_EXPIRED"
            subscription.expiryTime = now
        }.accountToken
        return buy(plan, accountToken: account, at: now, linkedTo: token)
    }

    /// Whether the token was acknowledged.
    public func isAcknowledged(_ token: String) -> Bool { state.withLock { $0.subscriptions[token]?.acknowledged ?? false } }

    struct UnknownToken: Error, CustomStringConvertible {
        let token: String
        var description: String { "the fake holds no such token (or no pending purchase) \(token.prefix(24))…" }
    }

    @discardableResult
    func change(_ token: String, _ body: (inout SubscriptionToken) -> Void) throws -> SubscriptionToken {
        try state.withLock { state in
            guard var subscription = state.subscriptions[token] else { throw UnknownToken(token: token) }
            body(&subscription)
            state.subscriptions[token] = subscription
            return subscription
        }
    }

    func notify(_ token: String, type: Int, at now: Date) -> [String: Any] {
        Self.subscriptionNotification(packageName: packageName, type: type, purchaseToken: token, at: now)
    }

    /// The token as `purchases.subscriptionsv2.get` answers it (the v3 discovery document's `SubscriptionPurchaseV2`).
    func subscriptionPurchaseV2(_ subscription: SubscriptionToken) -> [String: Any] {
        let time = Date.ISO8601FormatStyle(includingFractionalSeconds: true)
        var autoRenewingPlan: [String: Any] = ["autoRenewEnabled": subscription.autoRenew]
        autoRenewingPlan["recurringPrice"] =
            [
                "currencyCode": subscription.currency, "units": String(subscription.priceMicros / 1_000_000),
                "nanos": Int(subscription.priceMicros % 1_000_000) * 1000,
            ] as [String: Any]
        var lineItem: [String: Any] = [
            "productId": subscription.productId, "expiryTime": subscription.expiryTime.formatted(time),
            "latestSuccessfulOrderId": subscription.latestOrderId,
            "offerDetails": ["basePlanId": subscription.basePlanId, "offerTags": [] as [String]] as [String: Any],
            "autoRenewingPlan": autoRenewingPlan,
        ]
        lineItem["offerPhase"] = subscription.trial ? ["freeTrial": [:] as [String: String]] : ["basePrice": [:] as [String: String]]
        var purchase: [String: Any] = [
            "kind": "androidpublisher#subscriptionPurchaseV2", "regionCode": "US",
            "startTime": subscription.startTime.formatted(time), "subscriptionState": subscription.state,
            "latestOrderId": subscription.latestOrderId, "lineItems": [lineItem],
            "acknowledgementState": subscription.acknowledged ? "ACKNOWLEDGEMENT_STATE_ACKNOWLEDGED" : "ACKNOWLEDGEMENT_STATE_PENDING",
            "etag": "etag-\(subscription.renewals)-\(subscription.state.count)",
        ]
        if let linked = subscription.linkedPurchaseToken { purchase["linkedPurchaseToken"] = linked }
        if testPurchases { purchase["testPurchase"] = [:] as [String: String] }
        if let account = subscription.accountToken { purchase["externalAccountIdentifiers"] = ["obfuscatedExternalAccountId": account] }
        if let expired = subscription.expiredPurchase {
            var context: [String: Any] = ["expiredPurchaseToken": expired.token]
            if let account = expired.accountToken { context["expiredExternalAccountIdentifiers"] = ["obfuscatedExternalAccountId": account] }
            purchase["outOfAppPurchaseContext"] = context
        }
        if let cancellation = subscription.cancellation, ["SUBSCRIPTION_STATE_CANCELED", "SUBSCRIPTION_STATE_EXPIRED"].contains(subscription.state) {
            let context: [String: Any] =
                cancellation.kind == "userInitiatedCancellation" ? ["cancelTime": cancellation.at.formatted(time)] : [:]
            purchase["canceledStateContext"] = [cancellation.kind: context]
        }
        return purchase
    }
}
