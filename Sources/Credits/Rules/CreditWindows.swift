import Foundation
import Subscriptions

/// A billing period cut into credit windows: of the product's period, at most one calendar month from the anchor
/// (annual, six- and three-month plans, and multi-month offer periods reset monthly, day clamped), the last one
/// ending at Apple's end — so a renewal extension stretches only the last window.
public struct CreditWindow: Hashable, Sendable {
    public var index: Int
    public var interval: DateInterval
    public var start: Date { interval.start }
    public var end: Date { interval.end }
}

extension TierCatalogue {
    /// How many windows a period of `productId` with `offer` has: the months of the product's period (of a paid-up-
    /// front offer's period when that is longer), at least one — and one for a month of a monthly-billed commitment,
    /// whose one-year product is paid, and so resets, month by month.
    public func windowCount(productId: String, offer: SubscriptionState.Offer?, billedMonthly: Bool = false) -> Int {
        if billedMonthly { return 1 }
        let productMonths = tier(ofProduct: productId)?.product.billingPeriod?.months ?? 1
        let offerMonths = offer?.discountType == .payUpFront ? offer?.period.flatMap(BillingPeriod.init(iso8601:))?.months ?? 0 : 0
        return max(1, productMonths, offerMonths)
    }

    /// The credit windows of a period `[start, end)` of `productId`.
    public func windows(productId: String, offer: SubscriptionState.Offer?, start: Date, end: Date, billedMonthly: Bool = false)
        -> [CreditWindow]
    {
        let count = windowCount(productId: productId, offer: offer, billedMonthly: billedMonthly)
        var windows: [CreditWindow] = []
        for index in 0..<count {
            let from = index == 0 ? start : CreditCalendar.monthlyBoundary(anchor: start, month: index)
            let to = index == count - 1 ? end : min(CreditCalendar.monthlyBoundary(anchor: start, month: index + 1), end)
            guard index == 0 || from < to else { break }
            windows.append(CreditWindow(index: index, interval: DateInterval(start: from, end: max(from, to))))
        }
        return windows
    }

    /// The credit windows of a paid period, as the credits see them: the last one reaches the end of a grace period
    /// (`accessEnd`) while the period is in force, and every window closes when a newer period takes over, when the
    /// period is refunded or revoked in full, or when the subscription's access ends (`accessEndsAt`) — so credits a
    /// later correction posts there never count.
    public func windows(of period: PaidPeriod, accessEnd: Date? = nil, accessEndsAt: Date? = nil) -> [CreditWindow] {
        var windows = windows(
            productId: period.productId, offer: period.offer, start: period.start, end: period.end, billedMonthly: period.billedMonthly)
        if let accessEnd, let last = windows.indices.last, accessEnd > windows[last].end {
            windows[last].interval = DateInterval(start: windows[last].start, end: accessEnd)
        }
        // A refund that leaves access (Play's, until a read says the subscription ended) empties the window, it does not
        // close it.
        let revokedAt = period.revocation.flatMap { $0.prorated == nil && !$0.keepsAccess ? $0.date : nil }
        let closesAt = [period.replacedAt, revokedAt, accessEndsAt].compactMap { $0 }.min() ?? .distantFuture
        return windows.compactMap { window in
            guard window.start < closesAt else { return nil }
            var window = window
            window.interval = DateInterval(start: window.start, end: min(window.end, closesAt))
            return window
        }
    }
}
