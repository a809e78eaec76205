/// A decoded signed app transaction (`AppTransaction`), as carried by `RESCIND_CONSENT` notifications in
/// `appData.signedAppTransactionInfo`. Dates are milliseconds since 1970.
public struct AppTransactionPayload: Codable, Sendable, Equatable {
    /// The environment: `Production`, `Sandbox`, `Xcode`, `LocalTesting`.
    public var receiptType: AppStoreEnvironment?
    public var appAppleId: Int64?
    public var bundleId: String?
    public var applicationVersion: String?
    public var versionExternalIdentifier: Int64?
    public var receiptCreationDate: Int64?
    public var originalPurchaseDate: Int64?
    public var originalApplicationVersion: String?
    public var deviceVerification: String?
    public var deviceVerificationNonce: String?
    public var preorderDate: Int64?
    public var appTransactionId: String?
    public var originalPlatform: String?
    public var signedDate: Int64?

    public init(receiptType: AppStoreEnvironment?, appAppleId: Int64?, bundleId: String?, receiptCreationDate: Int64?) {
        self.receiptType = receiptType
        self.appAppleId = appAppleId
        self.bundleId = bundleId
        self.receiptCreationDate = receiptCreationDate
    }
}
