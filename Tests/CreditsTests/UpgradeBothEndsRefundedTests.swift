import Credits
import Foundation
import Subscriptions
import Testing

/// Both ends of an upgrade's carry-over refunded: Apple refunds Pro's month (the period upgraded from) and Max's (the
/// upgrade), in either order, then reverses each refund, in either order, while credits of Pro's window are out in a
/// hold that ends anywhere between. Either refund alone takes the carry-over (docs/credits.md, the upgrade's paragraph:
/// "a customer refunded either keeps neither"), so expectations by hand, as the customer sees the top-ups: none of Pro's
/// credits while either refund stands, whatever came back through the carry and when; Pro's 1,000 less what the work
/// cost once both are reversed; nothing owed to a claim then; and a second derivation (`replay`) posting nothing.
@Suite("Upgrades: both ends of the carry-over refunded and reversed, in any order")
struct UpgradeBothEndsRefundedTests {
    typealias Walkthrough = DerivedStateCreditTests
    typealias CarryOut = UpgradeCarryOutTests

    /// Apple's notifications about Pro's month (the transaction upgraded from): the subscription is Max's, so the
    /// renewal info is the upgrade's, signed anew, and the status Max's — revoked while Max's refund stands.
    static func proMonth(_ type: String, at signed: Int64, revoked: Bool, maxRefunded: Bool) -> SubscriptionEvent {
        var event = Walkthrough.notification(
            type, nil, status: maxRefunded ? 5 : 1, product: "pro.monthly", from: Walkthrough.subscribedAt,
            to: Walkthrough.subscribedAt + Walkthrough.period, at: signed, revoked: revoked)
        event.renewalInfo = Walkthrough.upgrade.renewalInfo
        event.renewalInfo?.signedDate = signed
        event.renewalInfo?.autoRenewStatus = maxRefunded ? 0 : 1
        return event
    }

    /// Apple's notifications about Max's month (the upgrade).
    static func maxMonth(_ type: String, at signed: Int64, revoked: Bool) -> SubscriptionEvent {
        Walkthrough.notification(
            type, nil, status: revoked ? 5 : 1, product: "max.monthly", from: Walkthrough.upgradedAt,
            to: Walkthrough.upgradedAt + Walkthrough.period, at: signed, revoked: revoked)
    }

    @Test(
        "300 (and 100 spent) or all of Pro's 1,000 held, charged 0, half or all; Pro's month and the upgrade refunded in either order and reversed in either order; the hold ended before the upgrade, before each refund, before each reversal or after them"
    )
    func bothEnds() throws {
        let first = Walkthrough.refundedAt
        var runs = 0
        for held in [Int64(300), 1000] {
            for charge in Set([Int64(0), held / 2, held]).sorted() {
                for proRefundedFirst in [true, false] {
                    for proReversedFirst in [true, false] {
                        // The four events after the upgrade, in order, a minute apart.
                        let refunds = proRefundedFirst ? ["pro", "max"] : ["max", "pro"]
                        let reversals = proReversedFirst ? ["pro", "max"] : ["max", "pro"]
                        var events: [(name: String, event: SubscriptionEvent)] = []
                        var maxRefunded = false
                        for (index, end) in (refunds + reversals).enumerated() {
                            let at = first + Int64(index) * Walkthrough.minute
                            let refund = index < 2
                            if end == "max" { maxRefunded = refund }
                            let event =
                                end == "pro"
                                ? Self.proMonth(refund ? "REFUND" : "REFUND_REVERSED", at: at, revoked: refund, maxRefunded: maxRefunded)
                                : Self.maxMonth(refund ? "REFUND" : "REFUND_REVERSED", at: at, revoked: refund)
                            events.append(("\(end)'s \(refund ? "refund" : "reversal")", event))
                        }
                        // The hold ends before the upgrade (-1), or after the upgrade and the first `endsAfter` events.
                        for endsAfter in -1...4 {
                            runs += 1
                            let label =
                                "\(held) held, charged \(charge), \(events.map(\.name).joined(separator: ", ")), the hold ended "
                                + (endsAfter < 0
                                    ? "before the upgrade" : endsAfter == 0 ? "after the upgrade" : "after \(events[endsAfter - 1].name)")
                            let (start, window, hold) = try Self.held(held)
                            var world = start
                            // With 300 held, a lookup of 100 spent before the hold, given back when the hold ends (a
                            // spend's return is named apart from its take, as the API names them); all 1,000 held leave
                            // nothing to spend.
                            let spent = held == 1000 ? 0 : Int64(100)
                            let spend = CarryOut.take("spend:s", spent, from: window.key, in: &world.ledger)
                            func endHold(at now: Int64) {
                                CarryOut.end("hold:h", hold, charge: charge, at: Walkthrough.date(now), in: &world.ledger)
                                CarryOut.end("spend:s", spend, charge: 0, at: Walkthrough.date(now + 1), in: &world.ledger)
                            }
                            if endsAfter < 0 { endHold(at: Walkthrough.subscribedAt + Walkthrough.minute) }
                            world.deliver(Walkthrough.upgrade, now: Walkthrough.date(Walkthrough.upgradedAt))
                            #expect(world.ledger.balance(of: window.key) == 0, "\(label): Pro's window closed at the switch")
                            if endsAfter == 0 { endHold(at: Walkthrough.upgradedAt + Walkthrough.minute) }
                            for (index, (name, event)) in events.enumerated() {
                                world.deliver(event, now: Walkthrough.date(event.signedDate))
                                if endsAfter == index + 1 { endHold(at: event.signedDate + 1000) }
                                for (bucket, balance) in world.balances { #expect(balance >= 0, "\(label), after \(name): \(bucket) below zero") }
                                // By hand: while either refund stands, none of Pro's credits are the customer's.
                                if index < 3 { #expect(world.ledger.balance(of: CarryOut.topUp) == 0, "\(label), after \(name): a refund stands") }
                            }
                            // Both reversed: as if neither refund had been, Pro's 1,000 less the charge, nothing owed.
                            #expect(world.ledger.balance(of: CarryOut.topUp) == 1000 - charge, "\(label): both reversed")
                            let owed = world.ledger.entries(of: CarryOut.topUp).filter {
                                CreditClaims.isClaim($0.operationKey) || $0.operationKey.hasPrefix("reversed:claim:")
                            }.reduce(Int64(0)) { $0 + $1.delta }
                            #expect(owed == 0, "\(label): \(owed) still claimed on the top-ups")
                            let again = SubscriptionCredits.operationsDue(
                                try #require(world.derivation), catalogue: Walkthrough.catalogue, ledger: world.ledger,
                                now: Walkthrough.date(first + 5 * Walkthrough.minute))
                            #expect(again.isEmpty, "\(label): a second derivation posts \(again)")
                        }
                    }
                }
            }
        }
        #expect(runs == 2 * 3 * 4 * 6, "\(runs) runs")
    }

    @Test(
        "the upgrade refunded, all of Pro's window held and released while the refund stands (the refund takes them), then a copy of the refund 251 ms off the upgrade makes the carry stale: what the refund took of them is given back with its take, and the customer still keeps none; a second derivation posts nothing"
    )
    func staleAfterTakenBack() throws {
        let (start, _, hold) = try Self.held(1000)
        var world = start
        world.deliver(Walkthrough.upgrade, now: Walkthrough.date(Walkthrough.upgradedAt))
        world.deliver(Walkthrough.exactRefund, now: Walkthrough.date(Walkthrough.refundedAt))
        CarryOut.end("hold:h", hold, charge: 0, at: Walkthrough.date(Walkthrough.refundedAt + 1000), in: &world.ledger)
        let takenBack = world.ledger.entries.filter { $0.operationKey.hasPrefix("refund:") && $0.operationKey.contains(":back:hold-return:") }
        #expect(takenBack.map(\.delta) == [-1000], "the refund takes what came back: \(takenBack)")
        world.deliver(Walkthrough.refund, now: Walkthrough.date(Walkthrough.refundedAt + 2000))
        for row in takenBack { #expect(world.ledger.isPosted("reversed:\(row.operationKey)"), "\(row.operationKey) given back with its take") }
        for (bucket, balance) in world.balances { #expect(balance >= 0, "\(bucket) below zero") }
        // By hand: the upgrade refunded, the customer keeps none of Pro's credits (``UpgradeCarryOutTests/staleCarry()``).
        #expect(world.ledger.balance(of: CarryOut.topUp) == 0)
        let again = SubscriptionCredits.operationsDue(
            try #require(world.derivation), catalogue: Walkthrough.catalogue, ledger: world.ledger,
            now: Walkthrough.date(Walkthrough.refundedAt + 60_000))
        #expect(again.isEmpty, "a second derivation posts \(again)")
    }

    /// Pro bought, and `amount` of its window's 1,000 held (`hold:h`).
    static func held(_ amount: Int64) throws -> (Walkthrough.World, CreditBucket, [HoldSettlement.Debit]) {
        var world = Walkthrough.World()
        world.deliver(Walkthrough.subscribe, now: Walkthrough.date(Walkthrough.subscribedAt))
        let window = try #require(world.ledger.buckets.values.first { $0.kind == .cycle })
        let hold = CarryOut.take("hold:h", amount, from: window.key, in: &world.ledger)
        return (world, window, hold)
    }
}
