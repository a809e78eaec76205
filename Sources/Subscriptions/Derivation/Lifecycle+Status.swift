import Foundation

extension Lifecycle {
    /// The status of the period in force and why it ended, if it did.
    struct Verdict {
        var status: SubscriptionStatus
        var endReason: EndReason?
        /// Access Apple reports beyond the periods held (a renewal never seen), until a recheck finds it.
        var accessUntil: Date?
        /// When a status without access began: the revocation of the period in force, else Apple's report of it.
        var endedAt: Date?
    }

    /// A refund or revocation of the period in force ends it. Otherwise Apple's newest report decides — its
    /// `data.status`, else what its type implies — unless the period both began and was signed after that report (a
    /// claim of a purchase Apple has not notified yet), in which case the period's own dates decide.
    static func status(of newest: Transaction, facts: SubscriptionFacts) -> Verdict {
        if let period = newest.period, period.revocation != nil {
            let reason = revocationReason(period, facts: facts)
            return Verdict(status: reason == .revoke ? .revoked : .refunded, endReason: reason, endedAt: period.revocation?.date)
        }
        let start = newest.period.map(milliseconds) ?? .min
        let learnt = newest.period?.signedAt ?? .min
        guard let report = facts.reportsInOrder.last, report.position.signedDate >= min(start, learnt) else {
            return Verdict(status: .active)
        }
        let renewal = facts.renewalInfo.flatMap { $0.position.signedDate >= min(start, learnt) ? $0.value : nil }
        var status: SubscriptionStatus
        if let code = report.appleStatus, let reported = SubscriptionStatus(appleStatusCode: code) {
            status = reported
        } else {
            switch report.type {
            case .expired: status = .expired
            case .didFailToRenew: status = report.subtype == .gracePeriod ? .gracePeriod : .billingRetry
            case .gracePeriodExpired: status = .billingRetry
            case .revoke: status = .revoked
            default:
                if renewal?.isInBillingRetryPeriod == true {
                    status = renewal?.gracePeriodExpiresDate == nil ? .billingRetry : .gracePeriod
                } else {
                    status = .active
                }
            }
        }
        // A monthly-billed commitment has no billing grace period: a failed month ends access at once (Apple).
        if status == .gracePeriod, newest.period?.billedMonthly == true { status = .billingRetry }
        // The report may name another transaction than the period in force (or come before its end): access ends
        // when Apple says so all the same.
        let reportedAt = date(milliseconds: report.position.signedDate)
        switch status {
        case .expired:
            let reason = report.type == .expired ? EndReason.expired(report.subtypeName ?? "OTHER") : expiredReason(intent: renewal?.expirationIntent)
            return Verdict(status: .expired, endReason: reason, endedAt: reportedAt)
        case .revoked:
            return Verdict(status: .revoked, endReason: .revoke, endedAt: reportedAt)
        case .refunded:
            return Verdict(status: .refunded, endReason: .refund, endedAt: reportedAt)
        case .active:
            return Verdict(status: .active, accessUntil: unseenRenewalEnd(newest.period, reportedAt: report.position.signedDate))
        case .gracePeriod:
            return Verdict(status: status)
        case .billingRetry:
            return Verdict(status: status, endedAt: reportedAt)
        }
    }

    /// When Apple reports the subscription active after the period in force ended, a renewal we never saw happened
    /// between the period's end and the report: it lasts at least as long as the period did, and covers the report.
    static func unseenRenewalEnd(_ period: PaidPeriod?, reportedAt: Int64) -> Date? {
        guard let period, reportedAt > milliseconds(period.end) else { return nil }
        let length = period.end.timeIntervalSince(period.start)
        return max(period.end.addingTimeInterval(length), date(milliseconds: reportedAt))
    }

    /// `EXPIRED_<reason>` from a renewal info's `expirationIntent`.
    static func expiredReason(intent: Int32?) -> EndReason {
        switch intent {
        case 1: return .expired("VOLUNTARY")
        case 2: return .expired("BILLING_RETRY")
        case 3: return .expired("PRICE_INCREASE")
        case 4: return .expired("PRODUCT_NOT_FOR_SALE")
        default: return .expired("OTHER")
        }
    }

    static func milliseconds(_ period: PaidPeriod) -> Int64 { milliseconds(period.start) }
}
