import PayloadDecoding

/// A decoded signed renewal info (`JWSRenewalInfoDecodedPayload`) — what happens at the next renewal.
public struct RenewalInfoPayload: Codable, Sendable, Equatable {
    public var originalTransactionId: String
    public var productId: String?
    public var autoRenewProductId: String?
    /// 0 off, 1 on.
    public var autoRenewStatus: Int32?
    public var expirationIntent: Int32?
    public var isInBillingRetryPeriod: Bool?
    public var gracePeriodExpiresDate: Int64?
    public var priceIncreaseStatus: Int32?
    public var offerType: Int32?
    public var offerIdentifier: String?
    public var offerDiscountType: String?
    public var offerPeriod: String?
    public var signedDate: Int64?
    public var environment: AppStoreEnvironment?
    public var recentSubscriptionStartDate: Int64?
    public var renewalDate: Int64?
    public var currency: String?
    public var renewalPrice: Int64?
    public var eligibleWinBackOfferIds: [String]?
    public var appAccountToken: String?
    public var appTransactionId: String?
    public var renewalBillingPlanType: String?
    public var commitmentInfo: CommitmentInfo?
    /// Advanced Commerce API only; kept as received.
    public var advancedCommerceInfo: JSONValue?

    public init(originalTransactionId: String, productId: String?, environment: AppStoreEnvironment?, signedDate: Int64?) {
        self.originalTransactionId = originalTransactionId
        self.productId = productId
        self.environment = environment
        self.signedDate = signedDate
    }

    /// Renewal terms of a monthly-billed plan with a 12-month commitment.
    public struct CommitmentInfo: Codable, Sendable, Equatable {
        public var commitmentAutoRenewProductId: String?
        public var commitmentAutoRenewStatus: Int32?
        public var commitmentRenewalBillingPlanType: String?
        public var commitmentRenewalDate: Int64?
        public var commitmentRenewalPrice: Int64?

        public init(
            commitmentAutoRenewProductId: String?, commitmentAutoRenewStatus: Int32?, commitmentRenewalBillingPlanType: String?,
            commitmentRenewalDate: Int64?, commitmentRenewalPrice: Int64?
        ) {
            self.commitmentAutoRenewProductId = commitmentAutoRenewProductId
            self.commitmentAutoRenewStatus = commitmentAutoRenewStatus
            self.commitmentRenewalBillingPlanType = commitmentRenewalBillingPlanType
            self.commitmentRenewalDate = commitmentRenewalDate
            self.commitmentRenewalPrice = commitmentRenewalPrice
        }
    }
}
