import Credits
import Foundation
import Subscriptions
import Testing

/// Max's month (the upgrade from Pro, DerivedStateCreditTests' walkthrough) refunded in full while it is the period in
/// force, then prorated once Max's renewal is known (an earlier period's refund claws back and gives the full refund's
/// removals back, the carry-over's take with them), then in full again while it is again the period in force — twice
/// over — and finally reversed. The derivations are the rules' input written by hand (the renewal known, then not), as a
/// store's copies signed in turn would give them. Expectations by hand, from what the customer is owed at each step
/// (docs/credits.md, "A refunded upgrade"): while the refund is full, none of Pro's credits in the top-ups — what the
/// carry moved, or what came back through it from a hold — and none of Max's month; while prorated, all of Pro's and
/// Max's month less half its grant; reversed, all of both; never below zero; a second derivation posting nothing. Until
/// 2026-12-05 the refund, full again, took nothing of the carry: its first take's key stood, given back or not.
@Suite("A refund of an upgrade that changed kind and back takes the carry-over again")
struct UpgradeRefundKindChangesTests {
    typealias Walkthrough = DerivedStateCreditTests
    typealias CarryOut = UpgradeCarryOutTests

    enum Kind { case full, prorated, reversed }

    static let steps: [Kind] = [.full, .prorated, .full, .prorated, .full, .reversed]

    /// Max's next month, known after the refund: the upgrade's month is then an earlier period.
    static let renewal = Walkthrough.notification(
        "DID_RENEW", nil, status: 1, product: "max.monthly", from: Walkthrough.upgradedAt + Walkthrough.period,
        to: Walkthrough.upgradedAt + 2 * Walkthrough.period, at: Walkthrough.refundedAt)

    @Test(
        "Pro's 1,000 with 0 or 600 spent before the upgrade, or all held and the hold ended (charged 0 or 400) after any step; a pack or none; Max's month full, prorated, full, prorated, full, reversed"
    )
    func everyStep() throws {
        var runs = 0
        for pack in [false, true] {
            for spent in [Int64(0), 600] { try Self.run(pack: pack, spent: spent, hold: nil, runs: &runs) }
            for charge in [Int64(0), 400] {
                for endsAfter in Self.steps.indices { try Self.run(pack: pack, spent: 0, hold: (charge, endsAfter), runs: &runs) }
            }
        }
        #expect(runs == 28, "\(runs) runs")
    }

    static func run(pack: Bool, spent: Int64, hold: (charge: Int64, endsAfter: Int)?, runs: inout Int) throws {
        runs += 1
        let label =
            "pack: \(pack), spent \(spent), " + (hold.map { "all held, charged \($0.charge), ended after step \($0.endsAfter)" } ?? "none held")
        var world = Walkthrough.World()
        world.deliver(Walkthrough.subscribe, now: Walkthrough.date(Walkthrough.subscribedAt))
        if pack {
            let sale = TopUpCredits.Sale(id: "q", productId: "credits.100", quantity: 1, revoked: false)
            for operation in TopUpCredits.operationsDue(sale, account: Walkthrough.account, catalogue: Walkthrough.catalogue, ledger: world.ledger) {
                world.ledger.apply(operation)
            }
        }
        let proWindow = try #require(world.ledger.buckets.values.first { $0.kind == .cycle })
        _ = CarryOut.take("spend:s", spent, from: proWindow.key, in: &world.ledger)
        let held = hold == nil ? [] : CarryOut.take("hold:h", 1000 - spent, from: proWindow.key, in: &world.ledger)
        world.deliver(Walkthrough.upgrade, now: Walkthrough.date(Walkthrough.upgradedAt))
        let own: Int64 = pack ? 100 : 0
        let carried = hold == nil ? 1000 - spent : 0
        #expect(world.ledger.balance(of: CarryOut.topUp) == own + carried, "\(label): the carry-over")

        let upgraded = try #require(world.derivation)
        let maxIndex = try #require(upgraded.periods.firstIndex { $0.upgradedFrom != nil })
        let maxWindow = try #require(world.ledger.buckets.values.first { $0.kind == .cycle && $0.key != proWindow.key }).key
        let maxGranted = world.ledger.balance(of: maxWindow)
        var renewedFacts = world.facts
        renewedFacts.merge(Self.renewal)
        let renewed = try #require(Lifecycle.derive(renewedFacts))
        #expect(renewed.state.billingPeriodKey != upgraded.periods[maxIndex].key, "\(label): the renewal is the period in force")
        let refund = PaidPeriod.Revocation(date: Walkthrough.date(Walkthrough.refundedAt), type: "REFUND_PRORATED", milliPercent: 50_000)

        var returned: Int64 = 0
        for (step, kind) in Self.steps.enumerated() {
            var derivation = kind == .prorated ? renewed : upgraded
            if kind != .reversed {
                let index = try #require(derivation.periods.firstIndex { $0.key == upgraded.periods[maxIndex].key })
                derivation.periods[index].revocation = refund
            }
            let at = Walkthrough.refundedAt + Int64(step + 1) * Walkthrough.minute
            for operation in SubscriptionCredits.operationsDue(
                derivation, catalogue: Walkthrough.catalogue, ledger: world.ledger, now: Walkthrough.date(at))
            {
                world.ledger.apply(operation)
            }
            if let hold, hold.endsAfter == step {
                CarryOut.end("hold:h", held, charge: hold.charge, at: Walkthrough.date(at + 1000), in: &world.ledger)
                returned = 1000 - spent - hold.charge
            }
            let due = SubscriptionCredits.operationsDue(
                derivation, catalogue: Walkthrough.catalogue, ledger: world.ledger, now: Walkthrough.date(at + 2000))
            #expect(due.isEmpty, "\(label), step \(step) (\(kind)): a second derivation posts \(due)")
            for (bucket, balance) in world.balances { #expect(balance >= 0, "\(label), step \(step): \(bucket) below zero") }
            // By hand: the full refund takes Pro's credits wherever they are in the top-ups, and Max's month; the
            // prorated one half of Max's grant, from Max's window.
            let topUp = kind == .full ? own : own + carried + returned
            #expect(world.ledger.balance(of: CarryOut.topUp) == topUp, "\(label), step \(step) (\(kind)): the top-ups")
            let window = kind == .full ? 0 : kind == .prorated ? maxGranted - (maxGranted + 1) / 2 : maxGranted
            #expect(world.ledger.balance(of: maxWindow) == window, "\(label), step \(step) (\(kind)): Max's window")
        }
    }
}
