import Foundation
import Testing

@testable import Credits

@Suite("Credit calendar")
struct CreditCalendarTests {
    func date(_ text: String) -> Date { try! Date(text, strategy: .iso8601) }

    @Test(
        "anchor Jan 31: Feb 28 in a common year, Feb 29 in a leap year, then back to the 31st",
        arguments: [
            (
                "2027-01-31T10:15:00Z",
                ["2027-01-31T10:15:00Z", "2027-02-28T10:15:00Z", "2027-03-31T10:15:00Z", "2027-04-30T10:15:00Z", "2027-05-31T10:15:00Z"]
            ),
            (
                "2028-01-31T10:15:00Z",
                ["2028-01-31T10:15:00Z", "2028-02-29T10:15:00Z", "2028-03-31T10:15:00Z", "2028-04-30T10:15:00Z", "2028-05-31T10:15:00Z"]
            ),
        ])
    func endOfMonthAnchor(anchor: String, expected: [String]) {
        for (k, text) in expected.enumerated() {
            #expect(CreditCalendar.monthlyBoundary(anchor: date(anchor), month: k) == date(text), "month \(k)")
        }
    }

    @Test("anchor Feb 29: Feb 28 in the following common year; Dec rolls into the next year")
    func leapDayAnchor() {
        let anchor = date("2028-02-29T00:00:00Z")
        #expect(CreditCalendar.monthlyBoundary(anchor: anchor, month: 1) == date("2028-03-29T00:00:00Z"))
        #expect(CreditCalendar.monthlyBoundary(anchor: anchor, month: 12) == date("2029-02-28T00:00:00Z"))
        #expect(CreditCalendar.monthlyBoundary(anchor: date("2026-12-15T08:00:00Z"), month: 2) == date("2027-02-15T08:00:00Z"))
    }

    @Test("month index and windows of an annual period; the last window ends at Apple's expiresDate")
    func monthIndex() {
        let anchor = date("2027-01-31T10:15:00Z")
        let end = date("2028-01-31T10:15:00Z")
        #expect(CreditCalendar.monthIndex(anchor: anchor, end: end, at: date("2027-01-31T10:14:59Z")) == nil)
        #expect(CreditCalendar.monthIndex(anchor: anchor, end: end, at: anchor) == 0)
        #expect(CreditCalendar.monthIndex(anchor: anchor, end: end, at: date("2027-02-28T10:14:59Z")) == 0)
        #expect(CreditCalendar.monthIndex(anchor: anchor, end: end, at: date("2027-02-28T10:15:00Z")) == 1)
        #expect(CreditCalendar.monthIndex(anchor: anchor, end: end, at: date("2028-01-31T10:14:59Z")) == 11)
        #expect(CreditCalendar.monthIndex(anchor: anchor, end: end, at: end) == nil)
        #expect(
            CreditCalendar.monthlyWindow(anchor: anchor, end: end, month: 1)
                == DateInterval(start: date("2027-02-28T10:15:00Z"), end: date("2027-03-31T10:15:00Z")))
        let shortened = date("2028-01-30T00:00:00Z")
        #expect(CreditCalendar.monthlyWindow(anchor: anchor, end: shortened, month: 11).end == shortened)
    }

    @Test("UTC day and month")
    func dayAndMonth() {
        #expect(
            CreditCalendar.day(containing: date("2028-02-29T23:59:59Z"))
                == DateInterval(start: date("2028-02-29T00:00:00Z"), end: date("2028-03-01T00:00:00Z")))
        #expect(
            CreditCalendar.month(containing: date("2027-02-10T05:00:00Z"))
                == DateInterval(start: date("2027-02-01T00:00:00Z"), end: date("2027-03-01T00:00:00Z")))
    }
}

@Suite("Proration, clawback and spend order")
struct ProrationTests {
    let day: Int64 = 86_400_000

    @Test("the reference's worked example: Pro 9.99 → 19.99 on Mar 11 of a Mar 1–Apr 1 period, 3000 credits → 1984")
    func workedExample() {
        // ratio = (19990 × 31 − 9990 × 21) / (19990 × 31) = 409900 / 619690 ≈ 0.66146
        #expect(Proration.upgradeGrant(allowance: 3000, newPrice: 19990, oldPrice: 9990, remaining: 21 * day, cycle: 31 * day) == 1984)
    }

    @Test("the ratio is clamped: a crossgrade costing less than the refund grants nothing; at the period's end the full allowance")
    func clamping() {
        #expect(Proration.upgradeGrant(allowance: 1000, newPrice: 4990, oldPrice: 9990, remaining: 30 * day, cycle: 30 * day) == 0)
        #expect(Proration.upgradeGrant(allowance: 1000, newPrice: 19990, oldPrice: 9990, remaining: 0, cycle: 30 * day) == 1000)
        #expect(Proration.upgradeGrant(allowance: 1000, newPrice: 19990, oldPrice: 9990, remaining: -5, cycle: 30 * day) == 1000)
        #expect(Proration.upgradeGrant(allowance: 1000, newPrice: 19990, oldPrice: 9990, remaining: 15 * day, cycle: 30 * day) == 750)
        #expect(Proration.upgradeGrant(allowance: 1000, newPrice: 0, oldPrice: 9990, remaining: day, cycle: 30 * day) == 0)
    }

    @Test("large allowances, annual durations and prices do not overflow")
    func noOverflow() {
        let year = 365 * day
        #expect(
            Proration.upgradeGrant(allowance: 2_000_000_000, newPrice: 1_999_990_000, oldPrice: 999_990_000, remaining: year / 2, cycle: year)
                == 1_500_002_500)
    }

    @Test("prorated clawback rounds up and never exceeds the grant")
    func clawback() {
        #expect(Proration.clawback(granted: 1000, milliPercent: 42_500) == 425)
        #expect(Proration.clawback(granted: 999, milliPercent: 33_333) == 333)  // 332.99667 → 333
        #expect(Proration.clawback(granted: 7, milliPercent: 1) == 1)
        #expect(Proration.clawback(granted: 1000, milliPercent: 100_000) == 1000)
        #expect(Proration.clawback(granted: 1000, milliPercent: 250_000) == 1000)
        #expect(Proration.clawback(granted: 1000, milliPercent: 0) == 0)
    }

    @Test("spends take cycle buckets in order, then top-ups; too little takes nothing")
    func spendOrder() {
        let balances: [(bucket: String, balance: Int64)] = [("cycle-a", 3), ("cycle-b", 0), ("topup", 10)]
        #expect(SpendPlan.plan(amount: 2, from: balances) == SpendPlan(debits: [("cycle-a", 2)]))
        #expect(SpendPlan.plan(amount: 5, from: balances) == SpendPlan(debits: [("cycle-a", 3), ("topup", 2)]))
        #expect(SpendPlan.plan(amount: 13, from: balances) == SpendPlan(debits: [("cycle-a", 3), ("topup", 10)]))
        #expect(SpendPlan.plan(amount: 14, from: balances) == nil)
        #expect(SpendPlan.plan(amount: 0, from: balances) == nil)
    }

    @Test("a spend sees the balances earlier spends left, of its own meter only; unlimited takes nothing")
    func spendingInSequence() {
        func bucket(_ key: String, _ meter: String, _ balance: Int64) -> AccountCredits.LiveBalance {
            AccountCredits.LiveBalance(
                bucket: CreditBucket(key: key, meter: meter, kind: .cycle, validFrom: Date(timeIntervalSince1970: 0), validUntil: nil),
                balance: balance)
        }
        var live = [bucket("cycle", "ai", 3), bucket("exports", "exports", 9), bucket("topup", "ai", 2)]
        var answers: [Int64?] = []
        for amount: Int64 in [2, 2, 2] {
            switch Spending.spend(amount, of: "ai", unlimited: false, from: live) {
            case .spent(_, let remaining, let after):
                answers.append(remaining)
                live = after
            case .insufficient(let available):
                answers.append(-available)
            case .unlimited:
                answers.append(nil)
            }
        }
        // 5 of "ai": 2 leaves 3, 2 more leaves 1 (the cycle bucket first, then the top-up), the third is refused with 1 left.
        #expect(answers == [3, 1, -1])
        #expect(live.map(\.balance) == [0, 9, 1])
        #expect(Spending.spend(1_000, of: "exports", unlimited: true, from: live) == .unlimited)
        #expect(Spending.spend(10, of: "exports", unlimited: false, from: live) == .insufficient(available: 9))
    }

    @Test("trial cap and billing periods")
    func allowances() {
        #expect(Allowance(perCycle: 1000, trialCap: 100).cycleGrant(isTrial: true) == 100)
        #expect(Allowance(perCycle: 1000, trialCap: 100).cycleGrant(isTrial: false) == 1000)
        #expect(Allowance(perCycle: 50, trialCap: 100).cycleGrant(isTrial: true) == 50)
        #expect(Allowance(perDay: 5).cycleGrant(isTrial: false) == nil)
        #expect(BillingPeriod(iso8601: "P1Y")?.resetsMonthly == true)
        #expect(BillingPeriod(iso8601: "P1M") == BillingPeriod(iso8601: "P1M"))
        #expect(BillingPeriod(iso8601: "P1M")?.resetsMonthly == false)
        #expect(BillingPeriod(iso8601: "P2W")?.days == 14)
        #expect(BillingPeriod(iso8601: "1M") == nil)
        // Counts an overflow would have crashed on (weeks and years multiply): refused, as any count past a million.
        #expect(BillingPeriod(iso8601: "P9223372036854775807W") == nil)
        #expect(BillingPeriod(iso8601: "P1537228672809129302Y") == nil)
        #expect(BillingPeriod(iso8601: "P1000001D") == nil)
        #expect(BillingPeriod(iso8601: "P1000000Y")?.months == 12_000_000)
        #expect(BillingPeriod(iso8601: "P0M") == nil)
        #expect(BillingPeriod(iso8601: "PXM") == nil)
    }
}

@Suite("Tier catalogue validation")
struct CatalogueValidationTests {
    @Test("every problem is reported, each naming its place")
    func problems() {
        let catalogue = TierCatalogue(
            meters: [.init(id: "ai", displayName: "AI"), .init(id: "ai", displayName: "AI again")],
            free: .init(displayName: "Free", allowances: ["ai": Allowance(perDay: 5, unlimited: true)]),
            tiers: [
                .init(
                    id: "pro", level: 1, displayName: "Pro", products: [.init(id: "p.m", period: "P1Q", price: 0, currency: "USD")],
                    allowances: ["ai": Allowance(perCycle: 10, trialCap: 20), "lookups": Allowance(perDay: 1)]),
                .init(
                    id: "max", level: 1, displayName: "Max", products: [.init(id: "p.m", period: "P1M", price: 100, currency: "USD")], allowances: [:]
                ),
            ],
            topUps: [.init(id: "c.1", meter: "nope", credits: 0)])
        let problems = catalogue.problems()
        let expected = [
            "meters: ai is defined 2 times",
            "free.allowances.ai: set exactly one of per_cycle, per_day, unlimited: true",
            "tiers.pro.products.p.m.period \"P1Q\" is not one of P<n>D, P<n>W, P<n>M, P<n>Y",
            "tiers.pro.products.p.m.price must be positive milliunits",
            "tiers.pro.allowances.ai.trial_cap 20 is above per_cycle 10",
            "tiers.pro.allowances.lookups: lookups is not a defined meter",
            "tiers.max.level 1 is also the level of pro",
            "tiers.max: product p.m is also listed by tiers.pro",
            "top_ups.c.1.meter nope is not a defined meter",
            "top_ups.c.1.credits must be positive",
        ]
        #expect(Set(problems) == Set(expected), "\(problems)")
        #expect(problems.count == expected.count)
    }
}
