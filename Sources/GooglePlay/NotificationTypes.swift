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
