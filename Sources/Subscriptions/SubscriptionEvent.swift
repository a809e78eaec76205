import AppStoreModels

/// A verified App Store event about one subscription: the notification's type and subtype plus the signed snapshot
/// (transaction and renewal info, `data.status`) as of `signedDate`.
public struct SubscriptionEvent: Sendable, Equatable {
    public var notificationType: String
    public var subtype: String?
    /// `signedDate` of the notification (ms): the ordering key between snapshots of one subscription.
    public var signedDate: Int64
    public var appleStatus: Int32?
    public var environment: String
    public var transaction: TransactionPayload
    public var renewalInfo: RenewalInfoPayload?

    public init(
        notificationType: String, subtype: String?, signedDate: Int64, appleStatus: Int32?, environment: String,
        transaction: TransactionPayload, renewalInfo: RenewalInfoPayload?
    ) {
        self.notificationType = notificationType
        self.subtype = subtype
        self.signedDate = signedDate
        self.appleStatus = appleStatus
        self.environment = environment
        self.transaction = transaction
        self.renewalInfo = renewalInfo
    }

    /// The event a verified notification describes, or `nil` when it carries no transaction (TEST, summaries, …).
    public init?(_ notification: VerifiedNotification) {
        guard let transaction = notification.transaction else { return nil }
        let payload = notification.payload
        self.init(
            notificationType: payload.notificationType, subtype: payload.subtype,
            signedDate: payload.signedDate ?? transaction.signedDate ?? 0, appleStatus: payload.data?.status,
            environment: (transaction.environment ?? payload.data?.environment)?.rawValue ?? "unknown",
            transaction: transaction, renewalInfo: notification.renewalInfo
        )
    }
}
