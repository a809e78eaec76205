/// The decoded `signedPayload` of an App Store Server Notification V2 (`ResponseBodyV2DecodedPayload`).
///
/// Every field is optional because Apple omits what does not apply; types and subtypes are kept as raw strings so a
/// notification type Apple adds tomorrow still decodes.
public struct NotificationPayload: Codable, Sendable, Equatable {
    public var notificationType: String
    public var subtype: String?
    public var notificationUUID: String
    public var data: NotificationData?
    public var summary: NotificationSummary?
    public var externalPurchaseToken: ExternalPurchaseToken?
    public var appData: NotificationAppData?
    public var version: String?
    /// Milliseconds since 1970; identical on every retry of the same notification.
    public var signedDate: Int64?

    public init(
        notificationType: String, subtype: String? = nil, notificationUUID: String, data: NotificationData? = nil,
        summary: NotificationSummary? = nil, externalPurchaseToken: ExternalPurchaseToken? = nil,
        appData: NotificationAppData? = nil, version: String? = "2.0", signedDate: Int64?
    ) {
        self.notificationType = notificationType
        self.subtype = subtype
        self.notificationUUID = notificationUUID
        self.data = data
        self.summary = summary
        self.externalPurchaseToken = externalPurchaseToken
        self.appData = appData
        self.version = version
        self.signedDate = signedDate
    }

    /// The identity the payload claims: taken from the first present of `data`, `summary`, `externalPurchaseToken`,
    /// `appData` (Apple's rule). `nil` when none of them is present.
    public var claimedIdentity: ClaimedIdentity? {
        if let data {
            return ClaimedIdentity(bundleId: data.bundleId, appAppleId: data.appAppleId, environment: data.environment)
        }
        if let summary {
            return ClaimedIdentity(bundleId: summary.bundleId, appAppleId: summary.appAppleId, environment: summary.environment)
        }
        if let token = externalPurchaseToken {
            let environment: AppStoreEnvironment? = token.externalPurchaseId.map {
                $0.hasPrefix("SANDBOX") ? .sandbox : .production
            }
            return ClaimedIdentity(bundleId: token.bundleId, appAppleId: token.appAppleId, environment: environment)
        }
        if let appData {
            return ClaimedIdentity(bundleId: appData.bundleId, appAppleId: appData.appAppleId, environment: appData.environment)
        }
        return nil
    }
}

/// Bundle id, app id and environment as claimed by a payload, checked against configuration after the signature.
public struct ClaimedIdentity: Sendable, Equatable {
    public var bundleId: String?
    public var appAppleId: Int64?
    public var environment: AppStoreEnvironment?

    public init(bundleId: String?, appAppleId: Int64?, environment: AppStoreEnvironment?) {
        self.bundleId = bundleId
        self.appAppleId = appAppleId
        self.environment = environment
    }
}

/// The `data` object of a notification.
public struct NotificationData: Codable, Sendable, Equatable {
    public var appAppleId: Int64?
    public var bundleId: String?
    public var bundleVersion: String?
    public var environment: AppStoreEnvironment?
    public var signedTransactionInfo: String?
    public var signedRenewalInfo: String?
    /// 1 active, 2 expired, 3 billing retry, 4 billing grace period, 5 revoked (absent before notifications 2.8).
    public var status: Int32?
    public var consumptionRequestReason: String?

    public init(
        appAppleId: Int64? = nil, bundleId: String?, bundleVersion: String? = nil, environment: AppStoreEnvironment?,
        signedTransactionInfo: String? = nil, signedRenewalInfo: String? = nil, status: Int32? = nil,
        consumptionRequestReason: String? = nil
    ) {
        self.appAppleId = appAppleId
        self.bundleId = bundleId
        self.bundleVersion = bundleVersion
        self.environment = environment
        self.signedTransactionInfo = signedTransactionInfo
        self.signedRenewalInfo = signedRenewalInfo
        self.status = status
        self.consumptionRequestReason = consumptionRequestReason
    }
}

/// The `summary` object of a `RENEWAL_EXTENSION/SUMMARY` notification.
public struct NotificationSummary: Codable, Sendable, Equatable {
    public var environment: AppStoreEnvironment?
    public var appAppleId: Int64?
    public var bundleId: String?
    public var productId: String?
    public var requestIdentifier: String?
    public var storefrontCountryCodes: [String]?
    public var succeededCount: Int64?
    public var failedCount: Int64?

    public init(
        environment: AppStoreEnvironment? = nil, appAppleId: Int64? = nil, bundleId: String? = nil, productId: String? = nil,
        requestIdentifier: String? = nil, storefrontCountryCodes: [String]? = nil, succeededCount: Int64? = nil, failedCount: Int64? = nil
    ) {
        self.environment = environment
        self.appAppleId = appAppleId
        self.bundleId = bundleId
        self.productId = productId
        self.requestIdentifier = requestIdentifier
        self.storefrontCountryCodes = storefrontCountryCodes
        self.succeededCount = succeededCount
        self.failedCount = failedCount
    }
}

/// The `externalPurchaseToken` object of an `EXTERNAL_PURCHASE_TOKEN` notification.
public struct ExternalPurchaseToken: Codable, Sendable, Equatable {
    public var externalPurchaseId: String?
    public var tokenCreationDate: Int64?
    public var appAppleId: Int64?
    public var bundleId: String?
    /// The kind of token (`ACQUISITION`, `SERVICES`), as Apple documents it for the External Purchase Server API.
    public var tokenType: String?
    /// Milliseconds since 1970: when the token stops being reportable.
    public var tokenExpirationDate: Int64?

    public init(
        externalPurchaseId: String?, tokenCreationDate: Int64?, appAppleId: Int64?, bundleId: String?, tokenType: String? = nil,
        tokenExpirationDate: Int64? = nil
    ) {
        self.externalPurchaseId = externalPurchaseId
        self.tokenCreationDate = tokenCreationDate
        self.appAppleId = appAppleId
        self.bundleId = bundleId
        self.tokenType = tokenType
        self.tokenExpirationDate = tokenExpirationDate
    }
}

/// The `appData` object of a `RESCIND_CONSENT` notification.
public struct NotificationAppData: Codable, Sendable, Equatable {
    public var appAppleId: Int64?
    public var bundleId: String?
    public var environment: AppStoreEnvironment?
    public var signedAppTransactionInfo: String?

    public init(appAppleId: Int64?, bundleId: String?, environment: AppStoreEnvironment?, signedAppTransactionInfo: String?) {
        self.appAppleId = appAppleId
        self.bundleId = bundleId
        self.environment = environment
        self.signedAppTransactionInfo = signedAppTransactionInfo
    }
}
