/// What an event says happened. The raw value is the `type` field consumers see and filter on.
public enum EventType: String, CaseIterable, Codable, Sendable {
    case subscriptionStarted = "subscription.started"
    case subscriptionRenewed = "subscription.renewed"
    case subscriptionPlanChanged = "subscription.plan_changed"
    case subscriptionRenewalDisabled = "subscription.renewal_disabled"
    case subscriptionRenewalEnabled = "subscription.renewal_enabled"
    case subscriptionBillingIssue = "subscription.billing_issue"
    case subscriptionGracePeriodStarted = "subscription.grace_period_started"
    case subscriptionRecovered = "subscription.recovered"
    case subscriptionExpired = "subscription.expired"
    case subscriptionRefunded = "subscription.refunded"
    case subscriptionRefundReversed = "subscription.refund_reversed"
    case subscriptionRevoked = "subscription.revoked"
    case subscriptionTransferred = "subscription.transferred"
    case subscriptionExtended = "subscription.extended"
    /// Apple asked what to show a customer looking at their subscription, and a retention answer was given.
    case subscriptionRetentionOffered = "subscription.retention_offered"
    /// Apple made a lapsed subscriber eligible for win-back offers (renewal info `eligibleWinBackOfferIds`).
    case subscriptionWinBackEligible = "subscription.win_back_eligible"
    case creditsGranted = "credits.granted"
    case creditsDepleted = "credits.depleted"
    case creditsLow = "credits.low"
    case creditsExhausted = "credits.exhausted"
    case purchaseRefundRequested = "purchase.refund_requested"
    case purchaseConsumableRefunded = "purchase.consumable_refunded"
    case purchaseStarted = "purchase.started"
    case purchaseEnded = "purchase.ended"
    case grantStarted = "grant.started"
    case grantEnded = "grant.ended"
    case accountOverlappingSubscriptions = "account.overlapping_subscriptions"
    /// The customer withdrew consent for the app (Apple's `RESCIND_CONSENT`).
    case accountConsentRescinded = "account.consent_rescinded"
}

/// A set of event types an endpoint or a feed reader wants: exact names, `prefix.*`, or `*` for all.
public struct EventTypeFilter: Sendable, Equatable {
    public let patterns: [String]

    /// Every pattern must name a known type or a known prefix (`subscription.*`); `problem` says which does not.
    public init(_ patterns: [String]) throws(EventTypeFilter.Problem) {
        for pattern in patterns where !Self.isKnown(pattern) { throw Problem(pattern: pattern) }
        self.patterns = patterns.isEmpty ? ["*"] : patterns
    }

    public static let all = try! EventTypeFilter(["*"])

    public func matches(_ type: EventType) -> Bool {
        patterns.contains { pattern in
            pattern == "*" || pattern == type.rawValue
                || (pattern.hasSuffix(".*") && type.rawValue.hasPrefix(String(pattern.dropLast())))
        }
    }

    /// The exact types matched, for a database filter.
    public var types: [EventType] { EventType.allCases.filter(matches) }

    private static func isKnown(_ pattern: String) -> Bool {
        pattern == "*" || EventType(rawValue: pattern) != nil
            || (pattern.hasSuffix(".*") && EventType.allCases.contains { $0.rawValue.hasPrefix(String(pattern.dropLast())) })
    }

    public struct Problem: Error, Sendable, CustomStringConvertible {
        public var pattern: String
        public var description: String {
            "unknown event type \"\(pattern)\" (use one of \(EventType.allCases.map(\.rawValue).joined(separator: ", ")), a prefix such as subscription.*, or *)"
        }
    }
}
