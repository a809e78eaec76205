import AppStoreModels
import Credits
import Foundation
import Subscriptions
import Testing

/// A claw-back (last month refunded at a percentage) that took from the first owner's top-up, credits of it out in a
/// hold, then the subscription claimed by another account, then Apple's `REFUND_REVERSED` — or the refund signed again
/// as a full one (`REFUND_FULL`), which takes last month's own credits and claws nothing back. Expected by hand from
/// what each customer had: every bucket ends as if no claw-back had been made, the hold's credits back where they came
/// from, the first owner's top-up included, whose rows the derivation reads only through
/// `CreditLedger.noteTakenElsewhere` once the subscription is the new owner's. Until 2026-12-06 a reversal after the
/// move gave back only the window's take: the first owner's top-up stayed short of what the claw-back took from it.
@Suite("Claw-backs: a refund reversed after the subscription changed hands gives the first owner's top-up back")
struct ClawBackReversedAfterTransferTests {
    typealias Base = ClawBackClaimsTests
    typealias Moved = ClawBackAfterTransferTests

    @Test(
        "window 10, the first owner's top-up 0–6, 0–16 spent, 0–4 held, last month refunded at 10/50/90 %, the hold released before the move, after the reversal or racing it, claimed by another account with 3, then the refund reversed or made full: each bucket as if nothing had been clawed back, and a second derivation posts nothing"
    )
    func reversedAfterTheMove() throws {
        var cases = 0
        var fromTopUp = 0
        var claimedOnTopUp = 0
        for extra in Int64(0)...6 {
            for spent in Int64(0)...(10 + extra) {
                for held in Int64(0)...min(4, 10 + extra - spent) {
                    for percentage: Int32 in [10_000, 50_000, 90_000] {
                        for release in Release.allCases {
                            for full in [false, true] {
                                cases += 1
                                let label =
                                    "top-up \(extra), spent \(spent), held \(held), \(percentage / 1000) %, released \(release), \(full ? "full" : "reversed")"
                                try check(
                                    extra: extra, spent: spent, held: held, percentage: percentage, release: release, full: full, label: label,
                                    fromTopUp: &fromTopUp, claimedOnTopUp: &claimedOnTopUp)
                            }
                        }
                    }
                }
            }
        }
        #expect(
            cases == 7_560 && fromTopUp > 2_000 && claimedOnTopUp > 500,
            "\(cases) cases, \(fromTopUp) took from the top-up, \(claimedOnTopUp) claimed there")
    }

    /// When the hold ends: before the move, after the reversal, or racing it — its group read the claims on the first
    /// owner's top-up before the reversal committed and wrote the payments after (the reversal's apply holds the new
    /// owner's lock, the hold's end the first owner's), so the next derivation of the subscription gives them back.
    enum Release: CaseIterable { case beforeTheMove, afterTheReversal, racingTheReversal }

    private func check(
        extra: Int64, spent: Int64, held: Int64, percentage: Int32, release: Release, full: Bool, label: String,
        fromTopUp: inout Int, claimedOnTopUp: inout Int
    ) throws {
        var (world, renewedAt) = Base.World.renewed()
        let now = Base.date(renewedAt + Base.day)
        world.support(extra)
        world.support(3, to: Moved.newOwner)
        _ = world.take("spend:s", spent, at: now)
        let hold = world.take("hold:h", held, at: now)
        // By hand, before any refund: the window's rest and the top-up's, the hold's credits counted as there.
        let window = 10 - min(spent, 10)
        let topUp = extra - max(spent - 10, 0)
        let windowKey = try #require(world.live(at: now).first { $0.key.hasPrefix("cycle:") }?.key)

        let refund = Base.period(0, signed: renewedAt + 2 * Base.day, refundedAt: percentage)
        world.deliver(refund, now: Base.date(refund.signedDate))
        if world.ledger.entries.contains(where: { $0.bucket == Base.topUp && $0.operationKey.hasPrefix("clawback:") }) { fromTopUp += 1 }
        if world.ledger.entries.contains(where: { $0.bucket == Base.topUp && $0.operationKey.hasPrefix("claim:clawback:") }) {
            claimedOnTopUp += 1
        }
        if release == .beforeTheMove, held > 0 { world.end("h", hold, charge: 0) }

        // Claimed by the new owner; then Apple's reversal of the refund (last month signed again without its
        // revocation) or its full refund, both derived as the new owner's, reading the first owner's top-up only
        // through the look-up.
        var claim = Base.period(1, signed: renewedAt).transaction
        claim.signedDate = refund.signedDate + Base.day
        let claimed: SubscriptionEvent = try #require(SubscriptionEvent(claimOf: claim, by: Moved.newOwner))
        try deliverAsTheNewOwner(claimed, to: &world, label: label)
        var again = Base.period(0, signed: refund.signedDate + 2 * Base.day)
        if full {
            again.notificationType = "REFUND"
            again.transaction.revocationDate = again.signedDate
            again.transaction.revocationReason = 0
            again.transaction.revocationType = "REFUND_FULL"
        } else {
            again.notificationType = "REFUND_REVERSED"
        }
        let claimsRead = world.claimsByBucket(of: hold, after: "hold:h:0")
        try deliverAsTheNewOwner(again, to: &world, label: label)
        if release != .beforeTheMove, held > 0 { world.end("h", hold, charge: 0, claims: release == .racingTheReversal ? claimsRead : nil) }
        if release == .racingTheReversal {
            // The subscription's next apply (a renewal, `replay`).
            try deliverAsTheNewOwner(nil, to: &world, now: Base.date(again.signedDate), label: label)
        }

        #expect(world.ledger.balance(of: Base.topUp) == topUp, "\(label): the first owner's top-up")
        #expect(world.ledger.balance(of: windowKey) == window, "\(label): the window, the new owner's now")
        #expect(world.ledger.balance(of: CreditBucket.topUp(account: Moved.newOwner, meter: "ai").key) == 3, "\(label): the new owner's own")
        let derivation = try #require(world.derivation)
        let read = Moved.read(world.ledger, owner: Moved.newOwner, derivation: derivation, noting: true)
        let once = SubscriptionCredits.operationsDue(derivation, catalogue: Base.catalogue, ledger: read, now: Base.date(again.signedDate))
        #expect(once.isEmpty, "\(label): a second derivation posts \(once)")
    }

    /// Merges `event` (none: derives again) and posts what its derivation owes to the world, the ledger read as the new owner's
    /// (``ClawBackAfterTransferTests/read(_:owner:derivation:noting:)``).
    private func deliverAsTheNewOwner(_ event: SubscriptionEvent?, to world: inout Base.World, now: Date? = nil, label: String) throws {
        if let event { world.facts.merge(event) }
        let derivation = try #require(world.derivation)
        #expect(derivation.state.accountId == Moved.newOwner, "\(label)")
        let read = Moved.read(world.ledger, owner: Moved.newOwner, derivation: derivation, noting: true)
        let now = try #require(now ?? event.map { Base.date($0.signedDate) })
        for operation in SubscriptionCredits.operationsDue(derivation, catalogue: Base.catalogue, ledger: read, now: now) {
            world.ledger.apply(operation)
        }
    }
}
