import AppStoreModels
import Entitlements
import Foundation
import Subscriptions

/// An event the rules found due, before it is stored: the change, whom it concerns and what caused it.
public struct EventDraft: Sendable, Equatable {
    public var type: EventType
    /// Names the change itself (`renewed:<subscription>:<billing period>`, a ledger row's key, …): an event whose key
    /// is stored already is not stored again, so replays and re-derivations never emit twice.
    public var key: String
    public var account: AccountID
    /// The subscription's `originalTransactionId`; `nil` for events about a consumable or a meter.
    public var subscription: String?
    public var environment: StoreEnvironment
    public var change: EventChange
    public var cause: EventCause

    public init(
        type: EventType, key: String, account: AccountID, subscription: String?, environment: StoreEnvironment, change: EventChange = EventChange(),
        cause: EventCause
    ) {
        self.type = type
        self.key = key
        self.account = account
        self.subscription = subscription
        self.environment = environment
        self.change = change
        self.cause = cause
    }
}

/// What changed, in the fields that apply to the event's type (absent otherwise).
public struct EventChange: Codable, Sendable, Equatable {
    public var fromProductId: String?
    public var toProductId: String?
    /// `upgrade`, `downgrade` or `crossgrade` (by the tiers' subscription-group levels).
    public var direction: String?
    /// `now`, or `next_renewal` for a change the customer scheduled.
    public var effective: String?
    /// Why a subscription ended (`EXPIRED_VOLUNTARY`, `EXPIRED_BILLING_RETRY`, …) or a refund's reason.
    public var reason: String?
    public var fromAccountId: String?
    public var toAccountId: String?
    public var previousExpiresAt: Date?
    public var expiresAt: Date?
    public var productId: String?
    public var transactionId: String?
    public var meter: String?
    /// Credits granted (positive) for `credits.granted`.
    public var amount: Int64?
    public var bucket: String?
    /// `purchase.refund_requested`: the request to answer (`PUT /v1/refund-requests/{id}/answer`) …
    public var refundRequestId: String?
    /// … before this instant, when Storekeeper answers from its policy …
    public var answerBy: Date?
    /// … within Apple's deadline.
    public var deadline: Date?
    /// `grant.started`, `grant.ended`: the grant (`DELETE /admin/grants/{grantId}` ends it).
    public var grantId: String?
    /// The tier a grant entitles.
    public var tier: String?
    /// `account.overlapping_subscriptions`: the catalogue group and the ids of the auto-renewing sources in it.
    public var group: String?
    public var sources: [String]?
    /// The store of the subscription an event is about (`app_store`, `stripe`).
    public var store: String?
    /// `credits.low`, `credits.exhausted`: what the meter has left after the spend or hold that crossed …
    public var remaining: Int64?
    /// … the `warn_at` threshold, in credits (0 for `credits.exhausted`).
    public var threshold: Int64?
    /// `subscription.retention_offered`: the rule of `STOREKEEPER_RETENTION` that answered (`default` when none
    /// did), the answer's kind (`message`, `alternate_product`, `promotional_offer`) and its approved message; the
    /// suggested plan is `productId`, the signed offer `offerId`.
    public var retentionRule: String?
    public var retentionAnswer: String?
    public var messageIdentifier: String?
    public var offerId: String?
    /// `subscription.win_back_eligible`: Apple's win-back offers, best first.
    public var offerIds: [String]?
    /// `account.consent_rescinded`: the customer's Apple `appTransactionId`.
    public var appTransactionId: String?

    public init(
        fromProductId: String? = nil, toProductId: String? = nil, direction: String? = nil, effective: String? = nil,
        reason: String? = nil, fromAccountId: String? = nil, toAccountId: String? = nil, previousExpiresAt: Date? = nil,
        expiresAt: Date? = nil, productId: String? = nil, transactionId: String? = nil, meter: String? = nil,
        amount: Int64? = nil, bucket: String? = nil, refundRequestId: String? = nil, answerBy: Date? = nil, deadline: Date? = nil,
        grantId: String? = nil, tier: String? = nil, group: String? = nil, sources: [String]? = nil, remaining: Int64? = nil,
        threshold: Int64? = nil, retentionRule: String? = nil, retentionAnswer: String? = nil, messageIdentifier: String? = nil,
        offerId: String? = nil, offerIds: [String]? = nil, appTransactionId: String? = nil
    ) {
        self.offerIds = offerIds
        self.appTransactionId = appTransactionId
        self.fromProductId = fromProductId
        self.toProductId = toProductId
        self.direction = direction
        self.effective = effective
        self.reason = reason
        self.fromAccountId = fromAccountId
        self.toAccountId = toAccountId
        self.previousExpiresAt = previousExpiresAt
        self.expiresAt = expiresAt
        self.productId = productId
        self.transactionId = transactionId
        self.meter = meter
        self.amount = amount
        self.bucket = bucket
        self.refundRequestId = refundRequestId
        self.answerBy = answerBy
        self.deadline = deadline
        self.grantId = grantId
        self.tier = tier
        self.group = group
        self.sources = sources
        self.remaining = remaining
        self.threshold = threshold
        self.retentionRule = retentionRule
        self.retentionAnswer = retentionAnswer
        self.messageIdentifier = messageIdentifier
        self.offerId = offerId
    }
}

/// The Apple ids behind an event: the notification (or claim, or Server API answer) that was being applied.
public struct EventCause: Codable, Sendable, Equatable {
    /// `notificationUUID`, or the id of a claim or Server API snapshot.
    public var eventId: String?
    public var notificationType: String?
    public var subtype: String?
    public var transactionId: String?
    public var originalTransactionId: String?
    public var signedDate: Date?

    public init(
        eventId: String? = nil, notificationType: String? = nil, subtype: String? = nil, transactionId: String? = nil,
        originalTransactionId: String? = nil, signedDate: Date? = nil
    ) {
        self.eventId = eventId
        self.notificationType = notificationType
        self.subtype = subtype
        self.transactionId = transactionId
        self.originalTransactionId = originalTransactionId
        self.signedDate = signedDate
    }

    /// The cause of applying a notification.
    public init(_ notification: VerifiedNotification) {
        self.init(
            eventId: notification.payload.notificationUUID.lowercased(), notificationType: notification.payload.notificationType,
            subtype: notification.payload.subtype, transactionId: notification.transaction?.transactionId,
            originalTransactionId: notification.originalTransactionId,
            signedDate: notification.payload.signedDate.map { Date(timeIntervalSince1970: Double($0) / 1000) })
    }

    /// The cause of applying `event`.
    public init(_ event: SubscriptionEvent) {
        self.init(
            eventId: event.id, notificationType: event.notificationType, subtype: event.subtype,
            transactionId: event.transaction.transactionId, originalTransactionId: event.transaction.originalTransactionId,
            signedDate: Date(timeIntervalSince1970: Double(event.signedDate) / 1000))
    }
}
