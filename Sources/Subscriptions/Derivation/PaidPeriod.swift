import AppStoreModels
import Foundation

/// One billing period of a subscription: every signed copy of it (a restore signs the same period again under a new
/// `transactionId`, keeping its `webOrderLineItemId`), merged.
public struct PaidPeriod: Equatable, Sendable {
    /// The period's identity: `webOrderLineItemId`, else the `transactionId`.
    public var key: String
    /// The period's first transaction (the lowest id among its copies).
    public var transactionId: String
    /// Every copy's `transactionId`, sorted.
    public var transactionIds: [String]
    public var productId: String
    public var start: Date
    /// Apple's `expiresDate` of the newest signed copy (a renewal extension moves it).
    public var end: Date
    /// What the customer paid, in milliunits, when the transaction says.
    public var price: Int64?
    /// The ISO 4217 code of ``price`` and ``charged`` (upper case), when the store says.
    public var currency: String?
    /// What was charged for this period in milliunits, when the store says: the App Store's `price`; a Stripe
    /// invoice's amount paid, after coupons and prorations (``price`` there is the list price per period).
    public var charged: Int64?
    /// Apple's monthly billing of a 12-month commitment (`billingPlanType` `MONTHLY`): each period is a month whatever
    /// the product's period says.
    public var billedMonthly: Bool
    /// Apple's `commitmentInfo` of a monthly-billed period: which month of the commitment it is.
    public var commitment: TransactionPayload.CommitmentInfo?
    public var offer: SubscriptionState.Offer?
    public var revocation: Revocation?
    /// The newest copy says `isUpgraded`: an immediate upgrade replaced this period.
    public var isUpgraded: Bool
    public var appAccountToken: String?
    public var ownership: String?
    /// When the newest copy was signed (ms).
    public var signedAt: Int64
    /// When a newer period took over before ``end`` (an upgrade or crossgrade, or a renewal that started early).
    public var replacedAt: Date?
    /// The ``key`` of the period of another product this one replaced mid-way (an immediate upgrade or crossgrade).
    public var upgradedFrom: String?
    /// The ``key`` of the period of another product this one replaced mid-way without being above it (a store that
    /// changes plans at once, downgrades too: Play): its first window gives at most what the replaced window had left.
    public var downgradedFrom: String? = nil
    /// A signed version of the period carried a prorated refund, perhaps reversed or refunded in full since
    /// (``SubscriptionFacts/proratedRefunds``): its claw-backs may have taken credits that a derivation gives back.
    public var hadProratedRefund = false

    /// A refund or revocation of the period.
    public struct Revocation: Hashable, Sendable {
        public init(date: Date, type: String?, milliPercent: Int32?, keepsAccess: Bool = false) {
            self.date = date
            self.type = type
            self.milliPercent = milliPercent
            self.keepsAccess = keepsAccess
        }

        /// A partial refund that leaves the period in force (Stripe's refund of part of a charge): its share of the
        /// credits goes, the rest stays. An App Store refund of the period in force always ends it.
        public var keepsAccess: Bool = false

        public var date: Date
        /// `REFUND_FULL`, `REFUND_PRORATED`, `FAMILY_REVOKE`.
        public var type: String?
        /// `revocationPercentage` in milli-percent, when Apple sent one.
        public var milliPercent: Int32?

        /// The share taken back for credits: a prorated refund's percentage, everything otherwise.
        public var prorated: Int32? { Self.isProrated(type: type, milliPercent: milliPercent) ? milliPercent : nil }

        /// Whether a refund of `type` at `milliPercent` takes back a share of the credits, not all of them.
        public static func isProrated(type: String?, milliPercent: Int32?) -> Bool {
            guard type == "REFUND_PRORATED", let milliPercent else { return false }
            return milliPercent < 100_000
        }
    }

    public init(
        key: String, transactionId: String, transactionIds: [String], productId: String, start: Date, end: Date, price: Int64?,
        offer: SubscriptionState.Offer?, revocation: Revocation?, isUpgraded: Bool = false, appAccountToken: String? = nil,
        ownership: String? = nil, signedAt: Int64, replacedAt: Date? = nil, upgradedFrom: String? = nil, currency: String? = nil,
        charged: Int64? = nil, billedMonthly: Bool = false, commitment: TransactionPayload.CommitmentInfo? = nil
    ) {
        self.commitment = commitment
        self.currency = currency
        self.charged = charged
        self.billedMonthly = billedMonthly
        self.key = key
        self.transactionId = transactionId
        self.transactionIds = transactionIds
        self.productId = productId
        self.start = start
        self.end = end
        self.price = price
        self.offer = offer
        self.revocation = revocation
        self.isUpgraded = isUpgraded
        self.appAccountToken = appAccountToken
        self.ownership = ownership
        self.signedAt = signedAt
        self.replacedAt = replacedAt
        self.upgradedFrom = upgradedFrom
    }

    /// Any offer whose discount is a free period: its credits are capped like a trial's.
    public var isFreeOffer: Bool { offer?.discountType == .freeTrial }
    /// An introductory free trial (`offerType` 1) — the only offer reported as `state: "trial"`.
    public var isIntroductoryTrial: Bool { offer?.type == .introductory && isFreeOffer }
    /// When the period's credit windows close: at its end, or earlier when a newer period took over.
    public var closesAt: Date { min(end, replacedAt ?? end) }

    /// The periods of a set of transactions, oldest first; transactions without dates form none.
    static func periods(of facts: SubscriptionFacts) -> [PaidPeriod] {
        let groups = Dictionary(grouping: facts.transactions.values) { $0.value.webOrderLineItemId ?? $0.value.transactionId }
        let periods = groups.compactMap { key, copies in
            period(key: key, copies: copies).map { period in
                var period = period
                period.appAccountToken =
                    period.appAccountToken
                    ?? period.transactionIds.compactMap { facts.accountTokens[$0] }.max { $0.position < $1.position }?.value
                period.hadProratedRefund = period.transactionIds.contains(where: facts.proratedRefunds.contains)
                return period
            }
        }
        return linked(periods)
    }

    /// `periods` oldest first, each closed where a newer one took over (``replacedAt``) and each that replaced a
    /// period of another product mid-way marked as its upgrade (``upgradedFrom``): the same rule for every store.
    public static func linked(_ periods: [PaidPeriod]) -> [PaidPeriod] {
        var periods = periods.sorted { ($0.start, $0.key) < ($1.start, $1.key) }
        for index in periods.indices {
            let period = periods[index]
            guard let next = periods[(index + 1)...].first(where: { $0.start < period.end }) else { continue }
            periods[index].replacedAt = max(next.start, period.start)
            if next.productId != period.productId, next.start > period.start,
                let nextIndex = periods.firstIndex(where: { $0.key == next.key })
            {
                periods[nextIndex].upgradedFrom = period.key
            }
        }
        return periods
    }

    private static func period(key: String, copies: [SubscriptionFacts.Signed<TransactionPayload>]) -> PaidPeriod? {
        guard let newestCopy = copies.max(by: { $0.position < $1.position }), case let newest = newestCopy.value,
            let purchase = newest.purchaseDate, let expires = newest.expiresDate
        else { return nil }
        let ids = copies.map(\.value.transactionId).sorted { ($0.count, $0) < ($1.count, $1) }
        let monthly = newest.billingPlanType.map(BillingPlan.init) == .monthly
        return PaidPeriod(
            key: key, transactionId: ids[0], transactionIds: ids.sorted(), productId: newest.productId,
            start: Lifecycle.date(milliseconds: purchase), end: Lifecycle.date(milliseconds: max(expires, purchase)),
            price: newest.price,
            offer: newest.offerType.map {
                SubscriptionState.Offer(
                    type: OfferType(code: $0), identifier: newest.offerIdentifier, discountType: newest.offerDiscountType.map(OfferDiscountType.init),
                    period: newest.offerPeriod)
            },
            revocation: newest.revocationDate.map {
                Revocation(
                    date: Lifecycle.date(milliseconds: $0), type: newest.revocationType,
                    milliPercent: newest.revocationPercentage)
            },
            isUpgraded: newest.isUpgraded == true, appAccountToken: newest.appAccountToken,
            ownership: newest.inAppOwnershipType, signedAt: newestCopy.position.signedDate, currency: newest.currency?.uppercased(),
            charged: newest.price, billedMonthly: monthly, commitment: monthly ? newest.commitmentInfo : nil)
    }
}
