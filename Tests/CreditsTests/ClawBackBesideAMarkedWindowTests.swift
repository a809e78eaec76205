import Credits
import Foundation
import Subscriptions
import Testing

/// A refund in full that leaves access (Play's voided order: the window stays open, emptied) finds this month's window
/// all held and marks it (``RefundOfWindowAllOutTests``), while last month is refunded at 50 % — a claw-back of 5 of
/// its 10 from what the subscription's live windows and the account's top-ups hold. No store sends both today (Play
/// refunds orders in full; Apple's and Stripe's full refunds close the window), so the derivation is Play-shaped by
/// hand from the App Store one; the rules must still hold if a store does. Expectations by hand, as the customer is
/// owed: this month's 10 are the refund's (less what the work charged), so none of them pays last month's claw-back,
/// which is the customer's own credits' to pay — 5 of the 20 in the top-up, or of none when there is no top-up (a
/// claim nothing pays); the window holds nothing, whether the work ended before the refunds or after them, and a
/// second derivation posts nothing.
@Suite("A claw-back beside a window refunded in full that stays open takes none of that window's credits")
struct ClawBackBesideAMarkedWindowTests {
    typealias Claws = ClawBackClaimsTests
    typealias World = Claws.World

    @Test(
        "this month's 10 held, settled for 0, 3 or 10, before or after this month is refunded in full keeping access and last month at 50 %; a top-up of 0 or 20"
    )
    func everyOrder() throws {
        var runs = 0
        for topUp in [Int64(0), 20] {
            for charge in [Int64(0), 3, 10] {
                for endedFirst in [true, false] {
                    runs += 1
                    let label = "top-up \(topUp), charged \(charge), the work ended \(endedFirst ? "before" : "after") the refunds"
                    var (world, renewedAt) = World.renewed()
                    world.support(topUp)
                    let now = Claws.date(renewedAt + Claws.day)
                    let window = try #require(world.live(at: now).first { $0.key.hasPrefix("cycle:") }).key
                    let hold = world.take("hold:h", 10, at: now)
                    #expect(world.ledger.balance(of: window) == 0, "\(label): all held")
                    let refundedAt = renewedAt + 2 * Claws.day
                    var derivation = try #require(world.derivation)
                    func derive(at time: Int64) {
                        for operation in SubscriptionCredits.operationsDue(
                            derivation, catalogue: Claws.catalogue, ledger: world.ledger, now: Claws.date(time))
                        {
                            world.ledger.apply(operation)
                        }
                    }
                    if endedFirst {
                        RefundOfWindowAllOutTests.end("hold:h", hold, charge: charge, at: Claws.date(refundedAt - 1_000), claims: true, in: &world)
                    }
                    derivation.periods[0].revocation = .init(
                        date: Claws.date(refundedAt - 1_000), type: "REFUND_PRORATED", milliPercent: 50_000, keepsAccess: true)
                    derivation.periods[1].revocation = .init(date: Claws.date(refundedAt), type: "REFUND_FULL", milliPercent: nil, keepsAccess: true)
                    derive(at: refundedAt)
                    #expect(world.live(at: Claws.date(refundedAt + 1)).contains { $0.key == window }, "\(label): the window stays open")
                    if !endedFirst {
                        RefundOfWindowAllOutTests.end("hold:h", hold, charge: charge, at: Claws.date(refundedAt + 1_000), claims: true, in: &world)
                    }
                    let after = refundedAt + 2_000
                    for bucket in world.ledger.buckets.keys {
                        #expect(world.ledger.balance(of: bucket) >= 0, "\(label): \(bucket) below zero")
                    }
                    let due = SubscriptionCredits.operationsDue(derivation, catalogue: Claws.catalogue, ledger: world.ledger, now: Claws.date(after))
                    #expect(due.isEmpty, "\(label): a second derivation posts \(due)")
                    #expect(world.ledger.balance(of: window) == 0, "\(label): this month's window")
                    #expect(world.ledger.balance(of: Claws.topUp) == max(topUp - 5, 0), "\(label): the top-up")
                }
            }
        }
        #expect(runs == 12, "\(runs) runs")
    }
}
