/// `subscriptionNotification.notificationType`, numbered as the Real-time developer notifications reference numbers
/// them (14–16 and 21 are unassigned). Every type is answered the same way — read the token again — so the type
/// only labels what happened; a number Google adds later is `unknown`, never a refusal.
public enum SubscriptionNotificationType: Sendable, Hashable {
    case recovered, renewed, canceled, purchased, onHold, inGracePeriod, restarted, priceChangeConfirmed, deferred
    case paused, pauseScheduleChanged, revoked, expired, itemsChanged, cancellationScheduled, priceChangeUpdated
    case pendingPurchaseCanceled, priceStepUpConsentUpdated
    case unknown(Int)

    private static let numbered: [(Int, SubscriptionNotificationType)] = [
        (1, .recovered), (2, .renewed), (3, .canceled), (4, .purchased), (5, .onHold), (6, .inGracePeriod), (7, .restarted),
        (8, .priceChangeConfirmed), (9, .deferred), (10, .paused), (11, .pauseScheduleChanged), (12, .revoked), (13, .expired),
        (17, .itemsChanged), (18, .cancellationScheduled), (19, .priceChangeUpdated), (20, .pendingPurchaseCanceled),
        (22, .priceStepUpConsentUpdated),
    ]

    public init(rawValue: Int) {
        self = Self.numbered.first { $0.0 == rawValue }?.1 ?? .unknown(rawValue)
    }

    public var rawValue: Int {
        if case .unknown(let number) = self { return number }
        return Self.numbered.first { $0.1 == self }?.0 ?? 0
    }

    /// The reference's name (`SUBSCRIPTION_RENEWED`), or `SUBSCRIPTION_<number>` for a number it does not name.
    public var name: String {
        let names = [
            1: "RECOVERED", 2: "RENEWED", 3: "CANCELED", 4: "PURCHASED", 5: "ON_HOLD", 6: "IN_GRACE_PERIOD", 7: "RESTARTED",
            8: "PRICE_CHANGE_CONFIRMED", 9: "DEFERRED", 10: "PAUSED", 11: "PAUSE_SCHEDULE_CHANGED", 12: "REVOKED", 13: "EXPIRED",
            17: "ITEMS_CHANGED", 18: "CANCELLATION_SCHEDULED", 19: "PRICE_CHANGE_UPDATED", 20: "PENDING_PURCHASE_CANCELED",
            22: "PRICE_STEP_UP_CONSENT_UPDATED",
        ]
        return "SUBSCRIPTION_" + (names[rawValue] ?? "\(rawValue)")
    }
}

/// `oneTimeProductNotification.notificationType`: 1 purchased, 2 canceled (a pending purchase that was not paid).
public enum OneTimeProductNotificationType: Sendable, Hashable {
    case purchased, canceled
    case unknown(Int)

    public init(rawValue: Int) {
        switch rawValue {
        case 1: self = .purchased
        case 2: self = .canceled
        default: self = .unknown(rawValue)
        }
    }

    public var rawValue: Int {
        switch self {
        case .purchased: return 1
        case .canceled: return 2
        case .unknown(let number): return number
        }
    }
}

extension OneTimeProductNotificationType {
    /// The reference's name (`ONE_TIME_PRODUCT_PURCHASED`), or `ONE_TIME_PRODUCT_<number>`.
    public var name: String {
        switch self {
        case .purchased: return "ONE_TIME_PRODUCT_PURCHASED"
        case .canceled: return "ONE_TIME_PRODUCT_CANCELED"
        case .unknown(let number): return "ONE_TIME_PRODUCT_\(number)"
        }
    }
}
