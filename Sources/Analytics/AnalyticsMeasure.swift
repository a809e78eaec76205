/// What the analytics rollups count, per UTC day. A *level* (actives, MRR) is stored as its changes — +1 on the day a
/// subscription starts counting, −1 on the day it stops — so its value on a day is the sum of every change up to and
/// including that day: its value at the end of the day. A *flow* (new trials, revenue) is what happened on the day.
/// `docs/analytics.md` defines each.
public enum AnalyticsMeasure: String, Sendable, CaseIterable, Codable {
    case activeSubscriptions = "active_subscriptions"
    case activeTrials = "active_trials"
    /// Milliunits of the entry's currency a month.
    case mrr
    case newTrials = "new_trials"
    /// Counted on the day the first paid period began.
    case trialConversions = "trial_conversions"
    /// A converted trial, counted on the day its trial began: its cohort.
    case trialCohortConversions = "trial_cohort_conversions"
    case newCustomers = "new_customers"
    /// A paid run of periods that ended (not followed by another at once), on the day it ended.
    case churned
    /// A paid run that began after an earlier one of the same subscription had ended, not as a billing recovery.
    case resubscriptions
    case billingRecoveries = "billing_recoveries"
    case transactions
    /// Milliunits charged, on the day the period began.
    case revenueGross = "revenue_gross"
    /// Milliunits refunded, on the day of the refund.
    case refunds
    case refundedTransactions = "refunded_transactions"
    /// Credits spent (usage rollups: dimension `product` holds the tier, `currency` the meter).
    case creditsSpent = "credits_spent"
    /// Credits granted by a tier's allowances (same dimensions as ``creditsSpent``).
    case creditsGranted = "credits_granted"

    /// Whether the measure is a level (summed over all days up to the one shown) rather than a flow.
    public var isLevel: Bool { self == .activeSubscriptions || self == .activeTrials || self == .mrr }
}
