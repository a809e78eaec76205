import PayloadDecoding

/// A decoded signed transaction (`JWSTransactionDecodedPayload`). Dates are milliseconds since 1970, prices are
/// milliunits of `currency`, `revocationPercentage` is milli-percent.
public struct TransactionPayload: Codable, Sendable, Equatable {
    public var transactionId: String
    public var originalTransactionId: String
    public var webOrderLineItemId: String?
    public var bundleId: String?
    public var productId: String
    public var subscriptionGroupIdentifier: String?
    public var purchaseDate: Int64?
    public var originalPurchaseDate: Int64?
    public var expiresDate: Int64?
    public var quantity: Int32?
    public var type: String?
    /// Kept as the raw string: a non-UUID token must not make the whole payload undecodable.
    public var appAccountToken: String?
    public var inAppOwnershipType: String?
    public var signedDate: Int64?
    public var revocationReason: Int32?
    public var revocationDate: Int64?
    public var revocationType: String?
    public var revocationPercentage: Int32?
    public var isUpgraded: Bool?
    public var offerType: Int32?
    public var offerIdentifier: String?
    public var offerDiscountType: String?
    public var offerPeriod: String?
    /// Absent in 2021-era payloads.
    public var environment: AppStoreEnvironment?
    public var storefront: String?
    public var storefrontId: String?
    public var transactionReason: String?
    public var currency: String?
    public var price: Int64?
    public var appTransactionId: String?
    /// The original transaction of the subscription this one continues, when Apple moved it (a migration).
    public var previousOriginalTransactionId: String?
    public var billingPlanType: String?
    public var commitmentInfo: CommitmentInfo?
    /// Advanced Commerce API only; kept as received.
    public var advancedCommerceInfo: JSONValue?

    public init(
        transactionId: String, originalTransactionId: String, productId: String, bundleId: String?,
        environment: AppStoreEnvironment?, signedDate: Int64?
    ) {
        self.transactionId = transactionId
        self.originalTransactionId = originalTransactionId
        self.productId = productId
        self.bundleId = bundleId
        self.environment = environment
        self.signedDate = signedDate
    }

    /// Billing progress of a monthly-billed plan with a 12-month commitment.
    public struct CommitmentInfo: Codable, Sendable, Equatable {
        public var billingPeriodNumber: Int32?
        public var totalBillingPeriods: Int32?
        public var commitmentExpiresDate: Int64?
        public var commitmentPrice: Int64?

        public init(billingPeriodNumber: Int32?, totalBillingPeriods: Int32?, commitmentExpiresDate: Int64?, commitmentPrice: Int64?) {
            self.billingPeriodNumber = billingPeriodNumber
            self.totalBillingPeriods = totalBillingPeriods
            self.commitmentExpiresDate = commitmentExpiresDate
            self.commitmentPrice = commitmentPrice
        }
    }
}
