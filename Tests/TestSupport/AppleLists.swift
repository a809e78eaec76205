/// Apple's published lists of what App Store signed payloads carry, each item with where and when Apple added it, taken
/// from Apple's changelogs and reference pages ("App Store Server Notifications changelog", "App Store Server API
/// changelog", `responseBodyV2DecodedPayload`, `JWSTransactionDecodedPayload`, `JWSRenewalInfoDecodedPayload`,
/// `AppTransaction`, `externalPurchaseToken`, `appData`, Retention Messaging's `DecodedRealtimeRequestBody`).
/// Apple's own server libraries are a floor, not the list: they lag the changelogs (`AppleLibraryFloorTests`).
public enum AppleLists {
    /// A field: its name, a JSON value of its documented type, and when Apple added it.
    public struct Field: Sendable {
        public var name: String
        public var sample: String
        public var since: String

        init(_ name: String, _ sample: String, _ since: String) {
            self.name = name
            self.sample = sample
            self.since = since
        }
    }

    /// `notificationType` values, with the notifications version or date that added each.
    public static let notificationTypes: [(String, String)] = [
        ("SUBSCRIBED", "2.0, 2021-06"), ("DID_CHANGE_RENEWAL_PREF", "2.0"), ("DID_CHANGE_RENEWAL_STATUS", "2.0"),
        ("OFFER_REDEEMED", "2.0"), ("DID_RENEW", "2.0"), ("EXPIRED", "2.0"), ("DID_FAIL_TO_RENEW", "2.0"),
        ("GRACE_PERIOD_EXPIRED", "2.0"), ("PRICE_INCREASE", "2.0"), ("REFUND", "2.0"), ("REFUND_DECLINED", "2.0"),
        ("CONSUMPTION_REQUEST", "2.0"), ("RENEWAL_EXTENDED", "2.0"), ("REVOKE", "2.0"), ("TEST", "2.3, 2022-06"),
        ("RENEWAL_EXTENSION", "2.6, 2022-10"), ("REFUND_REVERSED", "2.7, 2022-11"), ("EXTERNAL_PURCHASE_TOKEN", "2.10, 2024-01"),
        ("ONE_TIME_CHARGE", "2.15, 2024-09"), ("RESCIND_CONSENT", "2.19, 2025-12"),
        ("METADATA_UPDATE", "2026-05, Advanced Commerce"), ("MIGRATION", "2026-05, Advanced Commerce"),
        ("PRICE_CHANGE", "2026-05, Advanced Commerce"),
    ]

    /// `subtype` values.
    public static let subtypes: [(String, String)] = [
        ("INITIAL_BUY", "2.0"), ("RESUBSCRIBE", "2.0"), ("DOWNGRADE", "2.0"), ("UPGRADE", "2.0"), ("AUTO_RENEW_ENABLED", "2.0"),
        ("AUTO_RENEW_DISABLED", "2.0"), ("VOLUNTARY", "2.0"), ("BILLING_RETRY", "2.0"), ("PRICE_INCREASE", "2.0"),
        ("GRACE_PERIOD", "2.0"), ("PENDING", "2.0"), ("ACCEPTED", "2.0"), ("BILLING_RECOVERY", "2.0"),
        ("PRODUCT_NOT_FOR_SALE", "2.0"), ("SUMMARY", "2.6, 2022-10"), ("FAILURE", "2.6, 2022-10"), ("UNREPORTED", "2.10, 2024-01"),
        ("CREATED", "2025, External Purchase"), ("ACTIVE_TOKEN_REMINDER", "2025, External Purchase"),
    ]

    public static let transaction: [Field] = [
        Field("transactionId", #""2000000123""#, "1.0"), Field("originalTransactionId", #""2000000100""#, "1.0"),
        Field("webOrderLineItemId", #""2000000001""#, "1.0"), Field("bundleId", #""com.example.app""#, "1.0"),
        Field("productId", #""pro.monthly""#, "1.0"), Field("subscriptionGroupIdentifier", #""20000001""#, "1.0"),
        Field("purchaseDate", "1767225600000", "1.0"), Field("originalPurchaseDate", "1767225600000", "1.0"),
        Field("expiresDate", "1769904000000", "1.0"), Field("quantity", "1", "1.0"), Field("type", #""Auto-Renewable Subscription""#, "1.0"),
        Field("appAccountToken", #""7e3fb20b-4cdb-47cc-936d-99d65f608138""#, "1.0"), Field("inAppOwnershipType", #""PURCHASED""#, "1.0"),
        Field("signedDate", "1767225600000", "1.0"), Field("revocationReason", "1", "1.0"), Field("revocationDate", "1767312000000", "1.0"),
        Field("isUpgraded", "false", "1.0"), Field("offerType", "4", "1.0; 4 win-back since 2024-06"),
        Field("offerIdentifier", #""winback_1""#, "1.0"), Field("environment", #""Sandbox""#, "1.5, 2022-06"),
        Field("storefront", #""USA""#, "1.8, 2022-10"), Field("storefrontId", #""143441""#, "1.8, 2022-10"),
        Field("transactionReason", #""PURCHASE""#, "1.8, 2022-10"), Field("currency", #""USD""#, "1.10, 2023-08"),
        Field("price", "9990", "1.10, 2023-08"), Field("offerDiscountType", #""PAY_AS_YOU_GO""#, "1.10, 2023-08"),
        Field("offerPeriod", #""P1M""#, "1.14, 2025-03"), Field("appTransactionId", #""704289572311476853""#, "1.15, 2025-06"),
        Field("revocationType", #""REFUND_PRORATED""#, "1.17, 2025"), Field("revocationPercentage", "25000", "1.17, 2025"),
        Field("advancedCommerceInfo", #"{"requestReferenceId": "r-1", "items": []}"#, "2025, Advanced Commerce"),
        Field("previousOriginalTransactionId", #""2000000050""#, "2026, migrations"),
        Field("billingPlanType", #""MONTHLY""#, "1.21, 2026-04-27"),
        Field(
            "commitmentInfo",
            #"{"billingPeriodNumber": 2, "totalBillingPeriods": 12, "commitmentExpiresDate": 1798761600000, "commitmentPrice": 119880}"#,
            "1.21, 2026-04-27"),
    ]

    public static let renewalInfo: [Field] = [
        Field("expirationIntent", "1", "1.0"), Field("originalTransactionId", #""2000000100""#, "1.0"),
        Field("autoRenewProductId", #""pro.annual""#, "1.0"), Field("productId", #""pro.monthly""#, "1.0"),
        Field("autoRenewStatus", "1", "1.0"), Field("isInBillingRetryPeriod", "false", "1.0"), Field("priceIncreaseStatus", "1", "1.0"),
        Field("gracePeriodExpiresDate", "1769904000000", "1.0"), Field("offerType", "2", "1.0"), Field("offerIdentifier", #""stay""#, "1.0"),
        Field("signedDate", "1767225600000", "1.0"), Field("environment", #""Sandbox""#, "1.5, 2022-06"),
        Field("recentSubscriptionStartDate", "1767225600000", "1.8, 2022-10"), Field("renewalDate", "1769904000000", "1.10, 2023-08"),
        Field("currency", #""USD""#, "1.11, 2024-01"), Field("renewalPrice", "9990", "1.11, 2024-01"),
        Field("offerDiscountType", #""FREE_TRIAL""#, "1.11, 2024-01"),
        Field("eligibleWinBackOfferIds", #"["winback_1", "winback_2"]"#, "1.12, 2024-06"),
        Field("appAccountToken", #""7e3fb20b-4cdb-47cc-936d-99d65f608138""#, "1.15, 2025-06"),
        Field("appTransactionId", #""704289572311476853""#, "1.15, 2025-06"), Field("offerPeriod", #""P1M""#, "1.14, 2025-03"),
        Field("advancedCommerceInfo", #"{"requestReferenceId": "r-1"}"#, "2025, Advanced Commerce"),
        Field("renewalBillingPlanType", #""MONTHLY""#, "1.21, 2026-04-27"),
        Field(
            "commitmentInfo",
            #"{"commitmentAutoRenewProductId": "pro.monthly.12", "commitmentAutoRenewStatus": 0, "commitmentRenewalBillingPlanType": "MONTHLY", "commitmentRenewalDate": 1798761600000, "commitmentRenewalPrice": 9990}"#,
            "1.21, 2026-04-27"),
    ]

    public static let appTransaction: [Field] = [
        Field("receiptType", #""Sandbox""#, "iOS 16"), Field("appAppleId", "1234", "iOS 16"), Field("bundleId", #""com.example.app""#, "iOS 16"),
        Field("applicationVersion", #""1.2""#, "iOS 16"), Field("versionExternalIdentifier", "0", "iOS 16"),
        Field("receiptCreationDate", "1767225600000", "iOS 16"), Field("originalPurchaseDate", "1767225600000", "iOS 16"),
        Field("originalApplicationVersion", #""1.0""#, "iOS 16"), Field("deviceVerification", #""AAAA""#, "iOS 16"),
        Field("deviceVerificationNonce", #""2d7b2a39-8f3f-4b6e-9b1a-5d6e7f8a9b0c""#, "iOS 16"), Field("preorderDate", "1767139200000", "iOS 16"),
        Field("appTransactionId", #""704289572311476853""#, "iOS 18.4, 2025"), Field("originalPlatform", #""iOS""#, "iOS 18.4, 2025"),
        Field("signedDate", "1767225600000", "iOS 16"),
    ]

    /// `responseBodyV2DecodedPayload`, with each of its objects' fields.
    public static let notification: [Field] = [
        Field("notificationType", #""EXTERNAL_PURCHASE_TOKEN""#, "2.0"), Field("subtype", #""ACTIVE_TOKEN_REMINDER""#, "2.0"),
        Field("notificationUUID", #""002e14d5-51f5-4503-b5a8-c3a1af68eb20""#, "2.0"), Field("version", #""2.0""#, "2.0"),
        Field("signedDate", "1767225600000", "2.0"),
        Field(
            "data",
            #"{"appAppleId": 1234, "bundleId": "com.example.app", "bundleVersion": "1.2", "environment": "Sandbox", "signedTransactionInfo": "a.b.c", "signedRenewalInfo": "a.b.c", "status": 1, "consumptionRequestReason": "UNINTENDED_PURCHASE"}"#,
            "2.0; status 2.8, consumptionRequestReason 2.15"),
        Field(
            "summary",
            #"{"environment": "Sandbox", "appAppleId": 1234, "bundleId": "com.example.app", "productId": "pro.monthly", "requestIdentifier": "r-1", "storefrontCountryCodes": ["USA"], "succeededCount": 3, "failedCount": 0}"#,
            "2.6, 2022-10"),
        Field(
            "externalPurchaseToken",
            #"{"externalPurchaseId": "b2158121-7af9-49d4-9561-1f588205523e", "tokenCreationDate": 1767225600000, "appAppleId": 1234, "bundleId": "com.example.app", "tokenType": "SERVICES", "tokenExpirationDate": 1769904000000}"#,
            "2.10, 2024-01; tokenType and tokenExpirationDate 2025"),
        Field(
            "appData", #"{"appAppleId": 1234, "bundleId": "com.example.app", "environment": "Sandbox", "signedAppTransactionInfo": "a.b.c"}"#,
            "2.19, 2025-12"),
    ]

    /// Retention Messaging API 1.0, `DecodedRealtimeRequestBody`.
    public static let retentionRequest: [Field] = [
        Field("originalTransactionId", #""2000000100""#, "1.0, 2025"), Field("appAppleId", "1234", "1.0, 2025"),
        Field("productId", #""pro.monthly""#, "1.0, 2025"), Field("userLocale", #""en-US""#, "1.0, 2025"),
        Field("requestIdentifier", #""3db5c98d-8acf-4e29-831e-8e1f82f9f6e9""#, "1.0, 2025"), Field("signedDate", "1767225600000", "1.0, 2025"),
        Field("environment", #""Sandbox""#, "1.0, 2025"),
    ]

    /// A JSON object with every field at its sample value.
    public static func document(_ fields: [Field]) -> String {
        "{" + fields.map { "\"\($0.name)\": \($0.sample)" }.joined(separator: ", ") + "}"
    }
}
