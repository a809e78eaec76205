import Credits
import Foundation
import Subscriptions
import Testing

/// A monthly-billed 12-month commitment is a one-year product paid month by month: each paid month is one billing
/// period and one credit window, so the allowance resets with each payment — never twice in a month, whatever the
/// month's exact end.
@Suite("Credit windows of a monthly-billed commitment")
struct CommitmentWindowsTests {
    static let catalogue = TierCatalogue(
        meters: [.init(id: "ai", displayName: "AI requests")],
        free: .init(displayName: "Free", allowances: [:]),
        tiers: [
            .init(
                id: "pro", level: 1, displayName: "Pro", products: [.init(id: "pro.annual", period: "P1Y", price: 99_990, currency: "USD")],
                allowances: ["ai": Allowance(perCycle: 1000)])
        ],
        topUps: [])

    /// 2026-03-31T10:00:00Z, a month whose calendar successor (April 30) is shorter.
    static let start = Date(timeIntervalSince1970: 1_774_951_200)

    static func month(ending end: Date, billedMonthly: Bool) -> PaidPeriod {
        PaidPeriod(
            key: "w1", transactionId: "t1", transactionIds: ["t1"], productId: "pro.annual", start: start, end: end, price: 8_990,
            offer: nil, revocation: nil, signedAt: 0, billedMonthly: billedMonthly)
    }

    @Test("a paid month is one window, even when Apple's month ends past the calendar month")
    func oneWindowPerMonth() {
        // Apple's month may end later than the calendar's (the 31st → the 30th, an extension): an hour past here.
        let end = Calendar(identifier: .gregorian).date(byAdding: .month, value: 1, to: Self.start)!.addingTimeInterval(3_600)
        let windows = Self.catalogue.windows(of: Self.month(ending: end, billedMonthly: true))
        #expect(windows.count == 1)
        #expect(windows.first?.interval == DateInterval(start: Self.start, end: end))
        // The same dates billed up front are cut into the product's monthly windows: a second grant an hour long.
        #expect(Self.catalogue.windows(of: Self.month(ending: end, billedMonthly: false)).count == 2)
        #expect(Self.catalogue.windowCount(productId: "pro.annual", offer: nil, billedMonthly: true) == 1)
        #expect(Self.catalogue.windowCount(productId: "pro.annual", offer: nil) == 12)
    }
}
