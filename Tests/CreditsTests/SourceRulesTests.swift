import Credits
import Entitlements
import Foundation
import Subscriptions
import Testing

/// The store-neutral rules over grants and one-time purchases, without a database: which source decides, how their
/// monthly windows run and end, and that a purchase's ledger ends alike in any delivery order.
@Suite("Entitlement sources: the account rule and the credit windows of grants and purchases")
struct SourceRulesTests {
    static let start = Date(timeIntervalSince1970: 1_769_817_600)  // 2026-01-31T00:00:00Z
    static let catalogue = TierCatalogue(
        meters: [.init(id: "ai", displayName: "AI")],
        free: .init(displayName: "Free", allowances: ["ai": Allowance(perCycle: 10)]),
        tiers: [
            .init(id: "admin", level: 0, displayName: "Admin", products: [], allowances: ["ai": Allowance(unlimited: true)], grantableOnly: true),
            .init(
                id: "pro", level: 1, displayName: "Pro",
                products: [
                    .init(id: "pro.monthly", period: "P1M", price: 9990, currency: "USD"),
                    .init(id: "pro.lifetime", type: .lifetime, price: 99990, currency: "USD"),
                    .init(id: "pro.pass", type: .nonRenewing, duration: "P3M", price: 19990, currency: "USD"),
                ],
                allowances: ["ai": Allowance(perCycle: 100)]),
        ],
        topUps: [])
    static let account = AccountID("alice")!

    func day(_ days: Double) -> Date { Self.start.addingTimeInterval(days * 86_400) }

    @Test("the highest level decides (a grantable tier at 0 above all), ties to the source that lasts longest")
    func decidingSource() {
        let grant = EntitlementRecord(id: "g", kind: .grant, store: .operatorGrant, tier: "admin", startsAt: day(0), endsAt: day(10))
        let life = EntitlementRecord(id: "l", kind: .purchase, store: .appStore, productId: "pro.lifetime", startsAt: day(0))
        let pass = EntitlementRecord(id: "p", kind: .purchase, store: .appStore, productId: "pro.pass", startsAt: day(0))
        let sources = [grant, pass, life].map { Self.catalogue.source(of: $0, at: day(5)) }
        let entitlements = AccountEntitlements(sources)
        #expect(entitlements.entitling.map(\.id) == ["g", "l", "p"])
        #expect(entitlements.nextChangeAt == day(10))
        let later = AccountEntitlements([grant, pass, life].map { Self.catalogue.source(of: $0, at: day(11)) })
        #expect(later.deciding?.id == "l" && later.deciding?.kind == .lifetime)
        #expect(Self.catalogue.source(of: pass, at: day(5)).expiresAt == CreditCalendar.monthlyBoundary(anchor: day(0), month: 3))
    }

    @Test("windows run monthly from the start, clamped (Jan 31 → Feb 28 → Mar 31), and close where the source ends")
    func windows() {
        let life = EntitlementRecord(id: "l", kind: .purchase, store: .appStore, productId: "pro.lifetime", startsAt: day(0))
        let february = SourceCredits.window(of: life, catalogue: Self.catalogue, at: day(27))
        #expect(february?.index == 0 && february?.end == Date(timeIntervalSince1970: 1_772_236_800))  // 2026-02-28
        #expect(SourceCredits.window(of: life, catalogue: Self.catalogue, at: day(29))?.index == 1)
        var refunded = life
        refunded.endedAt = day(40)
        refunded.endReason = .refund
        #expect(SourceCredits.window(of: refunded, catalogue: Self.catalogue, at: day(41)) == nil)
        let ledger = LedgerSnapshot()
        let owed = SourceCredits.operationsDue(refunded, account: Self.account, catalogue: Self.catalogue, ledger: ledger, now: day(41))
        // Learnt only with its refund: the window it was refunded in, granted and closed at the refund.
        guard case .post(let entry, let bucket?)? = owed.first else {
            Issue.record("nothing owed: \(owed)")
            return
        }
        #expect(entry.delta == 100 && bucket.validUntil == day(40) && bucket.key == "source:l:w1:ai")
    }

    @Test("any delivery order of buy, refund and reversal ends in the same ledger")
    func anyOrder() {
        let bought = EntitlementRecord(id: "l", kind: .purchase, store: .appStore, productId: "pro.lifetime", startsAt: day(0), signedDate: 1)
        var refunded = bought
        (refunded.endedAt, refunded.endReason, refunded.signedDate) = (day(3), .refund, 2)
        var reversed = bought
        reversed.signedDate = 3
        let versions = [bought, refunded, reversed]
        var reference: [String: Int64]?
        for order in [[0, 1, 2], [0, 2, 1], [1, 0, 2], [1, 2, 0], [2, 0, 1], [2, 1, 0]] {
            var ledger = LedgerSnapshot()
            var held: EntitlementRecord?
            for (step, index) in order.enumerated() {
                let record = held.map { EntitlementRecord.newest($0, versions[index]) } ?? versions[index]
                held = record
                for operation in SourceCredits.operationsDue(
                    record, account: Self.account, catalogue: Self.catalogue, ledger: ledger, now: day(4 + Double(step)))
                {
                    ledger.apply(operation)
                }
            }
            let balances = Dictionary(uniqueKeysWithValues: ledger.buckets.keys.map { ($0, ledger.balance(of: $0)) })
            #expect(held?.endedAt == nil, "\(order): the reversal is the newest version")
            #expect(ledger.buckets["source:l:w0:ai"]?.validUntil == CreditCalendar.monthlyBoundary(anchor: day(0), month: 1), "\(order)")
            if let reference { #expect(balances == reference, "\(order)") } else { reference = balances }
        }
    }
}
