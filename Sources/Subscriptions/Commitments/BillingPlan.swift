import AppStoreModels
import Entitlements
import Foundation

/// How a subscription's price is billed: the whole period at its start (every store's plans until 2026), or — Apple's
/// monthly subscription with a 12-month commitment (`billingPlanType` `MONTHLY`) — a one-year product billed month
/// by month, each month a billing period of its own.
public enum BillingPlan: Hashable, Sendable, TextCoded {
    case billedUpfront
    case monthly
    case unknown(String)

    /// Apple's word (`BILLED_UPFRONT`, `MONTHLY`) or the API's (`billed_upfront`, `monthly`).
    public init(_ text: String) {
        switch text {
        case "BILLED_UPFRONT", "billed_upfront": self = .billedUpfront
        case "MONTHLY", "monthly": self = .monthly
        default: self = .unknown(text)
        }
    }

    /// The API's word: `billed_upfront`, `monthly`, or what the store said.
    public var text: String {
        switch self {
        case .billedUpfront: return "billed_upfront"
        case .monthly: return "monthly"
        case .unknown(let text): return text
        }
    }
}

extension SubscriptionState {
    /// Where a monthly-billed 12-month commitment stands: which month is paid, when the commitment ends, and what
    /// follows it.
    public struct Commitment: Codable, Sendable, Equatable {
        /// The paid month (Apple's `billingPeriodNumber`, 1 to ``of``).
        public var period: Int
        /// How many months the commitment bills (`totalBillingPeriods`, 12).
        public var of: Int
        /// When the commitment ends (`commitmentExpiresDate`); access runs to here once the customer turned off its
        /// renewal.
        public var endsAt: Date?
        /// The product a new commitment renews to at ``endsAt``; `nil` when it will not renew
        /// (`commitmentAutoRenewStatus` 0).
        public var renewsTo: String?
        /// Apple's `commitmentRenewalPrice` of the renewed commitment, in milliunits, as Apple sends it (its
        /// documentation does not say whether per month or for the commitment); `nil` when it will not renew.
        public var priceAfter: Int64?

        public init(period: Int, of: Int, endsAt: Date?, renewsTo: String?, priceAfter: Int64?) {
            self.period = period
            self.of = of
            self.endsAt = endsAt
            self.renewsTo = renewsTo
            self.priceAfter = priceAfter
        }

        /// Whether the paid month is the commitment's last.
        public var isFinalMonth: Bool { period >= of }

        /// The commitment of a monthly-billed transaction of `productId` with what its newest renewal info says about
        /// what follows: `commitmentAutoRenewStatus`, else `autoRenewStatus`, else — no renewal info yet, as when the
        /// app posts the purchase before Apple's notification — that it renews, as a subscription does until told.
        static func of(_ transaction: TransactionPayload.CommitmentInfo, productId: String, renewal: RenewalInfoPayload?) -> Commitment {
            let terms = renewal?.commitmentInfo
            let renews = (terms?.commitmentAutoRenewStatus ?? renewal?.autoRenewStatus ?? 1) == 1
            return Commitment(
                period: Int(transaction.billingPeriodNumber ?? 1), of: Int(transaction.totalBillingPeriods ?? 12),
                endsAt: transaction.commitmentExpiresDate.map(Lifecycle.date(milliseconds:)),
                renewsTo: renews ? terms?.commitmentAutoRenewProductId ?? renewal?.autoRenewProductId ?? productId : nil,
                priceAfter: renews ? terms?.commitmentRenewalPrice : nil)
        }
    }

    /// How long the store retries a failed charge after the period's end, before the clock alone expires the
    /// subscription: Apple's billing-retry window, 60 days (90 for a monthly-billed commitment, after which Apple ends
    /// the commitment). The same 60 days bound Google Play's grace period and account hold together (a base plan's
    /// `accountHoldDuration` is P0D–P60D and, with `gracePeriodDuration`, sums to 30–60 days: androidpublisher v3's
    /// `AutoRenewingBasePlanType`; older pages said P0D–P30D for the hold alone). Stripe's subscriptions use the same
    /// window (Stripe says when its retries give up: the subscription's next event).
    public var retryWindow: TimeInterval { billingPlan == .monthly ? Self.commitmentRetryWindow : Self.billingRetryWindow }

    /// How long Apple retries a failed monthly charge of a 12-month commitment.
    public static let commitmentRetryWindow: TimeInterval = 90 * 86_400
}
