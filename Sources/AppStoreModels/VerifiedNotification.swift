/// A notification whose envelope and every nested JWS passed signature and chain verification.
public struct VerifiedNotification: Codable, Sendable, Equatable {
    public var payload: NotificationPayload
    public var transaction: TransactionPayload?
    public var renewalInfo: RenewalInfoPayload?
    /// `appData.signedAppTransactionInfo` of `RESCIND_CONSENT` notifications.
    public var appTransaction: AppTransactionPayload?

    public init(
        payload: NotificationPayload, transaction: TransactionPayload?, renewalInfo: RenewalInfoPayload?,
        appTransaction: AppTransactionPayload? = nil
    ) {
        self.payload = payload
        self.transaction = transaction
        self.renewalInfo = renewalInfo
        self.appTransaction = appTransaction
    }

    /// The subscription this notification is about, when it carries a transaction.
    public var originalTransactionId: String? { transaction?.originalTransactionId ?? renewalInfo?.originalTransactionId }
}
