import Credits
import Foundation
import Subscriptions
import Testing

/// Last month refunded at 50 % (a claw-back of 5 of its 10 from this month's window and the top-up), then in full while
/// its period is again the one in force (the claw-back given back, last month's own credits removed), then at 50 %
/// again — twice over — and finally reversed. The derivations are the rules' input written by hand (the period in
/// force moved back and forth), as a store's copies signed in turn would give them. Expectations by hand, from what the
/// customer is owed at each step: while prorated, 5 less of this month's credits and the top-up, this month's first;
/// while full or reversed, all of them; never below zero; a second derivation posting nothing. Until 2026-12-05 the
/// second claw-back took nothing: its first take's key stood, given back or not.
@Suite("A prorated refund that changed kind and back claws back again")
struct ClawBackKindChangesTests {
    typealias Claws = ClawBackClaimsTests
    typealias World = Claws.World

    enum Kind { case prorated, full, reversed }

    @Test("this month's 10, 0 or 8 of them spent, a top-up of 0 or 20; last month prorated, full, prorated, full, prorated, reversed")
    func everyStep() throws {
        for spent in [Int64(0), 8] {
            for topUp in [Int64(0), 20] {
                let label = "\(spent) spent, top-up \(topUp)"
                var (world, renewedAt) = World.renewed()
                world.support(topUp)
                let now = renewedAt + Claws.day
                let window = try #require(world.live(at: Claws.date(now)).first { $0.key.hasPrefix("cycle:") }).key
                _ = world.take("spend:s", spent, at: Claws.date(now))
                let base = try #require(world.derivation)
                let refundedAt = now + Claws.day
                for (step, kind) in [Kind.prorated, .full, .prorated, .full, .prorated, .reversed].enumerated() {
                    var derivation = base
                    let at = refundedAt + Int64(step) * RefundStampTests.hour
                    switch kind {
                    case .prorated:
                        derivation.periods[0].revocation = .init(date: Claws.date(refundedAt), type: "REFUND_PRORATED", milliPercent: 50_000)
                    case .full:
                        derivation.periods[0].revocation = .init(date: Claws.date(refundedAt), type: "REFUND_PRORATED", milliPercent: 50_000)
                        derivation.state.billingPeriodKey = derivation.periods[0].key
                    case .reversed:
                        break
                    }
                    for operation in SubscriptionCredits.operationsDue(
                        derivation, catalogue: Claws.catalogue, ledger: world.ledger, now: Claws.date(at))
                    {
                        world.ledger.apply(operation)
                    }
                    let due = SubscriptionCredits.operationsDue(derivation, catalogue: Claws.catalogue, ledger: world.ledger, now: Claws.date(at + 1))
                    #expect(due.isEmpty, "\(label), step \(step) (\(kind)): a second derivation posts \(due)")
                    for bucket in world.ledger.buckets.keys {
                        #expect(world.ledger.balance(of: bucket) >= 0, "\(label), step \(step): \(bucket) below zero")
                    }
                    // By hand: 5 owed while prorated, this month's credits first; nothing owed otherwise.
                    let left = 10 - spent
                    let owed: Int64 = kind == .prorated ? 5 : 0
                    let fromWindow = min(owed, left)
                    #expect(world.ledger.balance(of: window) == left - fromWindow, "\(label), step \(step) (\(kind)): this month's window")
                    #expect(
                        world.ledger.balance(of: Claws.topUp) == max(topUp - (owed - fromWindow), 0), "\(label), step \(step) (\(kind)): the top-up")
                }
            }
        }
    }

    /// The same steps while 8 of this month's 10 are held for a model call: the claw-back takes what is there and claims
    /// the rest on the held credits, which pay it when the hold ends (docs/credits.md, "A claw-back that finds credits
    /// out"); the full refund gives back the take, its claim and the claim's payments; prorated again, it takes anew. By
    /// hand, the account's credits (window and top-up; where they sit depends on the order, the sum does not): what the
    /// work left, less 5 while prorated, never below zero.
    @Test(
        "8 held, the hold ended (charged 0 or 4) after any step, a top-up of 0 or 20; last month prorated, full, prorated, full, prorated, reversed")
    func whileHeld() throws {
        let steps: [Kind] = [.prorated, .full, .prorated, .full, .prorated, .reversed]
        var runs = 0
        for topUp in [Int64(0), 20] {
            for charge in [Int64(0), 4] {
                for endsAfter in steps.indices {
                    runs += 1
                    let label = "top-up \(topUp), charged \(charge), the hold ended after step \(endsAfter)"
                    var (world, renewedAt) = World.renewed()
                    world.support(topUp)
                    let now = renewedAt + Claws.day
                    let held = world.take("hold:h", 8, at: Claws.date(now))
                    #expect(held.map(\.amount) == [8], "\(label): the hold takes this month's first")
                    let base = try #require(world.derivation)
                    let refundedAt = now + Claws.day
                    for (step, kind) in steps.enumerated() {
                        var derivation = base
                        let at = refundedAt + Int64(step) * RefundStampTests.hour
                        if kind != .reversed {
                            derivation.periods[0].revocation = .init(date: Claws.date(refundedAt), type: "REFUND_PRORATED", milliPercent: 50_000)
                        }
                        if kind == .full { derivation.state.billingPeriodKey = derivation.periods[0].key }
                        for operation in SubscriptionCredits.operationsDue(
                            derivation, catalogue: Claws.catalogue, ledger: world.ledger, now: Claws.date(at))
                        {
                            world.ledger.apply(operation)
                        }
                        if step == endsAfter { world.end("h", held, charge: charge) }
                        let due = SubscriptionCredits.operationsDue(
                            derivation, catalogue: Claws.catalogue, ledger: world.ledger, now: Claws.date(at + 1))
                        #expect(due.isEmpty, "\(label), step \(step) (\(kind)): a second derivation posts \(due)")
                        for bucket in world.ledger.buckets.keys {
                            #expect(world.ledger.balance(of: bucket) >= 0, "\(label), step \(step): \(bucket) below zero")
                        }
                        let there = 10 + topUp - (step >= endsAfter ? charge : 8)
                        let total = world.live(at: Claws.date(now)).filter { !$0.key.hasPrefix("daily:") }.reduce(0) { $0 + $1.balance }
                        #expect(total == max(there - (kind == .prorated ? 5 : 0), 0), "\(label), step \(step) (\(kind)): the account's credits")
                    }
                }
            }
        }
        #expect(runs == 24)
    }
}
