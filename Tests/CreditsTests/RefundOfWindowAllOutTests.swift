import Credits
import Foundation
import Subscriptions
import Testing

/// This month refunded in full (or revoked) while every credit of its window is out — all 10 held, or 7 held and 3
/// spent on a lookup that failed — and the work ending before the refund, while it stands or after its reversal. The
/// hold's end and the spend's return read the window as a Stripe or Play window is read, from the ledger alone
/// (sql/0059: the window's first refund row since the debit that takes and stands), not from the App Store
/// subscription as stored (sql/0060), which names nothing once the subscription has moved to another period.
/// Expectations by hand, as the customer sees the window (docs/credits.md, "Held credits of a refunded window"): nothing
/// in it while the refund stands, whatever came back and when; once reversed, 10 less what the work cost, as had it
/// ended first; never below zero; a second derivation posting nothing at every step.
@Suite("A refund that found its window all out takes what comes back, read from the ledger alone")
struct RefundOfWindowAllOutTests {
    typealias Claws = ClawBackClaimsTests
    typealias World = Claws.World
    typealias Revocation = RefundStampTests.Revocation

    enum Ending: CaseIterable { case beforeRefund, whileRefunded, afterReversal }

    @Test(
        "10 held, or 7 held and 3 spent; charged 0, 3 or all held; refunded, family-revoked, refunded at 50 % in force, or refunded and signed again an hour later; the work ended before the refund, while it stands or after its reversal"
    )
    func everyOrder() throws {
        var runs = 0
        for kind in Revocation.allCases {
            for spent in [Int64(0), 3] {
                let held = 10 - spent
                for charge in Set([Int64(0), 3, held]).sorted() {
                    for ending in Ending.allCases {
                        runs += 1
                        let label = "\(kind), \(held) held and \(spent) spent, charged \(charge), the work ended \(ending)"
                        var (world, renewedAt) = World.renewed()
                        let now = Claws.date(renewedAt + Claws.day)
                        let window = try #require(world.live(at: now).first { $0.key.hasPrefix("cycle:") }).key
                        let spend = world.take("spend:s", spent, at: now)
                        let hold = world.take("hold:h", held, at: now)
                        #expect(world.ledger.balance(of: window) == 0, "\(label): all out")
                        func endWork(at time: Int64) {
                            Self.end("hold:h", hold, charge: charge, at: Claws.date(time), in: &world)
                            Self.end("spend:s", spend, charge: 0, at: Claws.date(time + 1), in: &world)
                        }
                        func check(_ step: String, at time: Int64) throws {
                            for bucket in world.ledger.buckets.keys {
                                #expect(world.ledger.balance(of: bucket) >= 0, "\(label), \(step): \(bucket) below zero")
                            }
                            let due = SubscriptionCredits.operationsDue(
                                try #require(world.derivation), catalogue: Claws.catalogue, ledger: world.ledger, now: Claws.date(time))
                            #expect(due.isEmpty, "\(label), \(step): a second derivation posts \(due)")
                        }
                        let refundedAt = renewedAt + 2 * Claws.day
                        if ending == .beforeRefund { endWork(at: refundedAt - RefundStampTests.hour) }
                        world.deliver(RefundStampTests.revoked(kind, at: refundedAt), now: Claws.date(refundedAt))
                        var last = refundedAt
                        if kind == .redated {
                            last = refundedAt + RefundStampTests.hour
                            world.deliver(RefundStampTests.revoked(.refund, at: last), now: Claws.date(last))
                        }
                        try check("after the refund", at: last + 1)
                        if ending == .whileRefunded {
                            endWork(at: last + 2 * RefundStampTests.hour)
                            try check("after the work ended", at: last + 3 * RefundStampTests.hour)
                        }
                        // By hand: the refund stands, the window holds nothing, whenever the work came back.
                        #expect(world.ledger.balance(of: window) == 0, "\(label): while the refund stands")
                        let reversedAt = refundedAt + Claws.day
                        world.deliver(RefundStampTests.reversed(at: reversedAt), now: Claws.date(reversedAt))
                        try check("after the reversal", at: reversedAt + 1)
                        if ending == .afterReversal {
                            endWork(at: reversedAt + RefundStampTests.hour)
                            try check("after the work ended", at: reversedAt + 2 * RefundStampTests.hour)
                        }
                        // As had the work ended before the refund: 10 less the charge, spendable.
                        let at = Claws.date(reversedAt + 3 * RefundStampTests.hour)
                        #expect(world.live(at: at).first { $0.key == window }?.balance == 10 - charge, "\(label): after the reversal")
                    }
                }
            }
        }
        #expect(runs == 4 * 2 * 3 * 3, "\(runs) runs")
    }

    /// A hold's end (`hold:<id>`) or a spend given back (`spend:<key>`, `charge` 0) as its group writes it, reading each
    /// debit's bucket as sql/0059 does: open when live at `now`, refunded by its first refund row after the debit that
    /// takes (below zero) and is not reversed; the claims made on each bucket since the debit when `claims`, else none.
    static func end(
        _ keyed: String, _ debits: [HoldSettlement.Debit], charge: Int64, at now: Date, claims: Bool = false, in world: inout World
    ) {
        guard !debits.isEmpty else { return }
        let ledger = world.ledger
        let live = Set(world.live(at: now).map(\.key))
        let since = Set(debits.map(\.bucket)).sorted().map { bucket in
            let refund = ledger.entries(of: bucket).drop { $0.operationKey != "\(keyed):0" }.first {
                $0.operationKey.hasPrefix("refund:") && $0.delta < 0 && !ledger.isPosted("reversed:\($0.operationKey)")
            }
            return CreditHold.BucketSince(
                bucket: bucket, kind: ledger.buckets[bucket]?.kind.text, open: live.contains(bucket), refunded: refund != nil,
                refundedBy: refund?.operationKey, owner: Claws.account.text)
        }
        let destinations = CreditHold.destinations(since, open: live, account: Claws.account)
        let open = claims ? world.claimsByBucket(of: debits, after: "\(keyed):0") : [:]
        let outcome = HoldSettlement.settle(debits, charge: charge, destination: { destinations[$0] }, claims: { open[$0] ?? [] })!
        let rows = CreditHold.rowsAsWritten(
            keyed, debits: debits, outcome: outcome, since: since, account: Claws.account, meter: "ai", at: now)
        for row in rows { world.ledger.apply(.post(row, opening: nil)) }
    }
}
