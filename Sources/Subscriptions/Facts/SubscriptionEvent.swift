import AppStoreModels
import Foundation

/// A verified App Store event about one auto-renewable subscription: a notification's type and subtype plus the
/// signed snapshot (transaction, renewal info, `data.status`) as of `signedDate` — or a signed transaction an app
/// posted for an account (a *claim*).
public struct SubscriptionEvent: Codable, Sendable, Equatable {
    /// `notificationType` of events that come from a client-posted transaction rather than a notification.
    public static let clientTransactionType = "CLIENT_TRANSACTION"
    /// `notificationType` of snapshots the App Store Server API returned (Get All Subscription Statuses).
    public static let serverStatusType = "SERVER_API_STATUS"

    /// Unique per event: the `notificationUUID`, or `client:<transactionId>:<signedDate>:<account>` for a claim.
    public var id: String
    public var notificationType: String
    public var subtype: String?
    /// `signedDate` of the notification (ms): with ``id`` it orders the events of one subscription.
    public var signedDate: Int64
    public var appleStatus: Int32?
    public var environment: AppStoreEnvironment
    public var transaction: TransactionPayload
    public var renewalInfo: RenewalInfoPayload?
    /// The account that posted the transaction (claims only). A claim links the subscription to it.
    public var claimant: AccountID?

    public init(
        id: String, notificationType: String, subtype: String?, signedDate: Int64, appleStatus: Int32?,
        environment: AppStoreEnvironment, transaction: TransactionPayload, renewalInfo: RenewalInfoPayload?, claimant: AccountID? = nil
    ) {
        self.id = id
        self.notificationType = notificationType
        self.subtype = subtype
        self.signedDate = signedDate
        self.appleStatus = appleStatus
        self.environment = environment
        self.transaction = transaction
        self.renewalInfo = renewalInfo
        self.claimant = claimant
    }

    /// The event a verified notification describes, or `nil` when it is not about an auto-renewable subscription
    /// (TEST, summaries, consumables, …).
    public init?(_ notification: VerifiedNotification) {
        guard let transaction = notification.transaction, transaction.isAutoRenewable else { return nil }
        let payload = notification.payload
        self.init(
            id: payload.notificationUUID.lowercased(), notificationType: payload.notificationType, subtype: payload.subtype,
            signedDate: payload.signedDate ?? transaction.signedDate ?? 0, appleStatus: payload.data?.status,
            environment: transaction.environment ?? payload.data?.environment ?? .unknown,
            transaction: transaction, renewalInfo: notification.renewalInfo
        )
    }

    /// The claim of a signed transaction by `account`, or `nil` when the transaction is not an auto-renewable
    /// subscription.
    public init?(claimOf transaction: TransactionPayload, by account: AccountID) {
        guard transaction.isAutoRenewable else { return nil }
        let signedDate = transaction.signedDate ?? transaction.purchaseDate ?? 0
        self.init(
            id: "client:\(transaction.transactionId):\(signedDate):\(account.text)",
            notificationType: Self.clientTransactionType, subtype: nil, signedDate: signedDate, appleStatus: nil,
            environment: transaction.environment ?? .unknown, transaction: transaction, renewalInfo: nil,
            claimant: account
        )
    }

    /// A snapshot the App Store Server API returned for a subscription: its `status` and the signed transaction and
    /// renewal info, as of the later of their `signedDate`s.
    public init(serverStatus status: Int32, transaction: TransactionPayload, renewalInfo: RenewalInfoPayload?) {
        let signedDate = max(transaction.signedDate ?? 0, renewalInfo?.signedDate ?? 0)
        self.init(
            id: "api:\(transaction.transactionId):\(signedDate)", notificationType: Self.serverStatusType, subtype: nil,
            signedDate: signedDate, appleStatus: status,
            environment: transaction.environment ?? renewalInfo?.environment ?? .unknown,
            transaction: transaction, renewalInfo: renewalInfo)
    }

    /// Where the event sits in Apple's order of this subscription's events.
    public var position: EventPosition { EventPosition(signedDate: signedDate, eventId: id) }

    /// Whether this fact says a purchase was taken back: a REFUND or REVOKE notification, or a transaction with a
    /// revocation date. Only a subscription with such a fact can have an archived refund or revocation that a later
    /// fact reverses.
    public var mentionsRevocation: Bool {
        if transaction.revocationDate != nil { return true }
        switch NotificationType(notificationType) {
        case .refund, .revoke: return true
        default: return false
        }
    }
}

/// The order of one subscription's events: `signedDate`, ties broken by event id so every replica sorts alike.
public struct EventPosition: Comparable, Hashable, Sendable, Codable {
    public var signedDate: Int64
    public var eventId: String

    public init(signedDate: Int64, eventId: String) {
        self.signedDate = signedDate
        self.eventId = eventId
    }

    public static func < (lhs: EventPosition, rhs: EventPosition) -> Bool {
        (lhs.signedDate, lhs.eventId) < (rhs.signedDate, rhs.eventId)
    }
}

extension TransactionPayload {
    /// Whether this is an auto-renewable subscription (payloads without `type` are assumed to be).
    public var isAutoRenewable: Bool { type == nil || type == "Auto-Renewable Subscription" }
}
