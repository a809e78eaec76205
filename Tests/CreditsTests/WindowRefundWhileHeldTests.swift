import AppStoreModels
import Credits
import Foundation
import Subscriptions
import Testing

/// A full refund of the period in force while some of its window's credits are out — held for a model call, or spent
/// and given back later — and then the refund's reversal, exhaustively over small amounts, with the rules alone. The
/// refund claims the credits out (``SubscriptionCredits``, ``CreditClaims``) and what comes back pays the claim
/// (``CreditHold/refundedWindows(_:)``, ``HoldSettlement``), read as the group's read reads it, so the customer
/// ends the same whether the work came back before the refund or after it: the top-ups less what the work cost of
/// them while refunded, and everything but the charge once the refund is reversed. Until 2026-12-04 those credits
/// lapsed and the reversal did not give them back; and a refund that found the window all out posted nothing, so what
/// came back was spendable until the next derivation took it.
@Suite("A refunded window: credits coming back after the refund are given back by its reversal")
struct WindowRefundWhileHeldTests {
    typealias World = ClawBackClaimsTests.World

    /// This month's period (the one in force after ``ClawBackClaimsTests/World/renewed()``) refunded in full at
    /// `signed`, or its newest signed copy without the revocation (Apple's `REFUND_REVERSED`).
    static func thisMonth(signed: Int64, refunded: Bool) -> SubscriptionEvent {
        var event = ClawBackClaimsTests.period(1, signed: signed)
        if refunded {
            event.transaction.revocationDate = signed
            event.transaction.revocationReason = 0
            event.transaction.revocationType = "REFUND_FULL"
        }
        (event.id, event.notificationType, event.subtype) = (
            refunded ? "refund-\(signed)" : "reversed-\(signed)", refunded ? "REFUND" : "REFUND_REVERSED", nil
        )
        return event
    }

    @Test(
        "the hold ends (or the spend is given back) before the refund or after it: the same credits after the refund and after its reversal, never below zero; a second derivation posts nothing"
    )
    func eitherOrder() throws {
        var cases = 0
        var paid = 0
        for extra in Int64(0)...3 {
            for spent in [Int64(0), 2] {
                for held in Int64(1)...(10 + extra - spent) {
                    for charge in Int64(0)...held {
                        cases += 1
                        let label = "top-up \(extra), spent \(spent), held \(held), charged \(charge)"
                        var ends: [Bool: (refunded: Int64, reversed: Int64)] = [:]
                        for endsFirst in [true, false] {
                            var (world, renewedAt) = World.renewed()
                            let now = ClawBackClaimsTests.date(renewedAt + ClawBackClaimsTests.day)
                            world.support(extra)
                            let spend = world.take("spend:s", spent, at: now)
                            let debits = world.take("hold:h", held, at: now)
                            if endsFirst {
                                world.endAsRead("h", debits, charge: charge, at: now)
                                world.giveBackAsRead("s", spend, at: now)
                            }
                            let refund = Self.thisMonth(signed: renewedAt + 2 * ClawBackClaimsTests.day, refunded: true)
                            world.deliver(refund, now: ClawBackClaimsTests.date(refund.signedDate))
                            // The refund ended the subscription's access, and with it the window.
                            let refunded = ClawBackClaimsTests.date(refund.signedDate + 60_000)
                            if !endsFirst {
                                world.endAsRead("h", debits, charge: charge, at: refunded)
                                world.giveBackAsRead("s", spend, at: refunded)
                                if world.ledger.entries.contains(where: {
                                    $0.operationKey.hasPrefix("claim:refund:") && $0.operationKey.contains(":paid:")
                                }) {
                                    paid += 1
                                }
                            }
                            for bucket in world.live(at: refunded) { #expect(bucket.balance >= 0, "\(label): \(bucket.key) below zero") }
                            #expect(!world.live(at: refunded).contains { $0.key.hasPrefix("cycle:") }, "\(label): the window is closed")
                            let left = world.live(at: refunded).reduce(0) { $0 + $1.balance }
                            let derivation = try #require(world.derivation)
                            let again = SubscriptionCredits.operationsDue(
                                derivation, catalogue: ClawBackClaimsTests.catalogue, ledger: world.ledger, now: refunded)
                            #expect(again.isEmpty, "\(label): a second derivation posts \(again)")
                            let reversal = Self.thisMonth(signed: refund.signedDate + ClawBackClaimsTests.day, refunded: false)
                            world.deliver(reversal, now: ClawBackClaimsTests.date(reversal.signedDate))
                            let reversed = ClawBackClaimsTests.date(reversal.signedDate + 60_000)
                            for bucket in world.live(at: reversed) { #expect(bucket.balance >= 0, "\(label): \(bucket.key) below zero") }
                            ends[endsFirst] = (left, world.live(at: reversed).reduce(0) { $0 + $1.balance })
                        }
                        // By hand: the work charged from the front of the spend order — the window's 10, then the
                        // top-ups — so the top-ups keep `extra` less what of the charge the window did not cover; the
                        // refund takes the window. Reversed, everything but the charge is back.
                        let order = "hold ended first, refund after"
                        let byHand = (refunded: extra - max(charge - (10 - spent), 0), reversed: 10 + extra - charge)
                        #expect(ends[true]?.refunded == byHand.refunded && ends[true]?.reversed == byHand.reversed, "\(label), \(order): \(ends)")
                        #expect(ends[false]?.refunded == ends[true]?.refunded, "\(label): after the refund, \(ends)")
                        #expect(ends[false]?.reversed == ends[true]?.reversed, "\(label): after the reversal, \(ends)")
                    }
                }
            }
        }
        // Something came back from the window after the refund, and paid its claim, in every case but those where the
        // charge took all the hold had of the window and nothing was spent: 520 of the 576.
        #expect(cases == 576 && paid == 520, "\(cases) cases, \(paid) paid the refund's claim")
    }

    @Test("the refunded windows of a read: a window or a day a refund took from since, not reversed, not carried; never a top-up or a bucket gone")
    func refundedWindows() {
        let since: [CreditHold.BucketSince] = [
            .init(bucket: "cycle:p1:w0:ai", kind: "cycle", open: false, refunded: true),
            .init(bucket: "daily:a:ai:2026-12-04:pro", kind: "daily", open: true, refunded: true),
            .init(bucket: "cycle:p1:w1:ai", kind: "cycle", open: true, refunded: false),
            .init(bucket: "cycle:p0:w0:ai", kind: "cycle", open: true, carriedTo: "topup:a:ai", refunded: true),
            .init(bucket: "topup:a:ai", kind: "topup", open: true, refunded: true),
            .init(bucket: "cycle:gone:w0:ai", kind: nil, refunded: true),
        ]
        #expect(CreditHold.refundedWindows(since) == ["cycle:p1:w0:ai", "daily:a:ai:2026-12-04:pro"])
        // They have no destination: what comes back there pays claims and lapses, it is not returned.
        #expect(CreditHold.destinations(since, open: Set(since.map(\.bucket)))["cycle:p1:w0:ai"] == nil)
        let outcome = HoldSettlement.settle(
            [.init(bucket: "cycle:p1:w0:ai", amount: 7)], charge: 2, destination: { _ in nil },
            claims: { $0 == "cycle:p1:w0:ai" ? [.init(key: "claim:refund:p1:1:cycle:p1:w0:ai", outstanding: 3)] : [] },
            refunded: CreditHold.refundedWindows(since).contains)
        #expect(outcome?.payments == [.init(claim: "claim:refund:p1:1:cycle:p1:w0:ai", bucket: "cycle:p1:w0:ai", from: "cycle:p1:w0:ai", amount: 3)])
        #expect(outcome?.returns == [] && outcome?.lapsed == 5 && outcome?.returned == 0)
    }
}

extension ClawBackClaimsTests.World {
    /// What became of each bucket of `debits` since the row `first`, as the group's read says it: its kind, whether a
    /// refund took from it since (not reversed), and the unpaid claims made since.
    func since(_ debits: [HoldSettlement.Debit], after first: String) -> [CreditHold.BucketSince] {
        let start = ledger.entries.firstIndex { $0.operationKey == first } ?? ledger.entries.endIndex
        let claims = CreditClaimsTests.claims(after: first, in: ledger)
        return Set(debits.map(\.bucket)).sorted().map { bucket in
            let refunded = ledger.entries[start...].contains { row in
                row.bucket == bucket && row.delta < 0 && row.operationKey.hasPrefix("refund:") && !ledger.isPosted("reversed:" + row.operationKey)
            }
            return CreditHold.BucketSince(
                bucket: bucket, kind: ledger.buckets[bucket]?.kind.text, refunded: refunded,
                claims: claims.filter { claim in ledger.entries.first { $0.operationKey == claim.key }?.bucket == bucket })
        }
    }

    /// The settlement of `debits` as a hold's group or a spend's reversal decides it at `now`, from ``since(_:after:)``.
    func outcome(_ debits: [HoldSettlement.Debit], after first: String, charge: Int64, at now: Date) -> HoldSettlement.Outcome {
        let since = since(debits, after: first)
        let open = Set(live(at: now).map(\.key))
        let destinations = CreditHold.destinations(since, open: open)
        let refunded = CreditHold.refundedWindows(since)
        let claims = CreditHold.claims(since)
        return HoldSettlement.settle(
            debits, charge: charge, destination: { destinations[$0] }, claims: { claims[$0] ?? [] }, refunded: refunded.contains)!
    }

    /// The hold `hold:<id>` ended as its group writes it.
    @discardableResult
    mutating func endAsRead(_ id: String, _ debits: [HoldSettlement.Debit], charge: Int64, at now: Date) -> HoldSettlement.Outcome {
        let outcome = outcome(debits, after: "hold:\(id):0", charge: charge, at: now)
        post(end: id, debits, outcome)
        return outcome
    }

    /// The spend `spend:<id>` given back as its reversal writes it; nothing for no debits.
    mutating func giveBackAsRead(_ id: String, _ debits: [HoldSettlement.Debit], at now: Date) {
        guard !debits.isEmpty else { return }
        post(givenBack: id, debits, outcome(debits, after: "spend:\(id):0", charge: 0, at: now))
    }
}
