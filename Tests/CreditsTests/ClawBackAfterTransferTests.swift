import AppStoreModels
import Credits
import Foundation
import Subscriptions
import Testing

/// A claw-back (an earlier period refunded at a percentage) that took from the owner's top-ups, then the subscription
/// claimed by another account: the new owner's credits are not clawed back again. The ledger a derivation reads holds
/// the subscription's buckets and its owner's, so after the move the first owner's take-backs are out of sight unless
/// found by key (``SubscriptionCredits/takeBackKeys(of:formerOwners:catalogue:)``, ``LedgerSnapshot/noteTakenElsewhere(_:)``),
/// as `CreditLedger.noteTakenElsewhere` does on PostgreSQL. Expectations worked by hand: what the claw-back left in the
/// window, plus what the new owner had.
@Suite("Claw-backs: a subscription that changed hands is not clawed back again from its new owner")
struct ClawBackAfterTransferTests {
    typealias Base = ClawBackClaimsTests
    static let newOwner = AccountID("clawback-new-owner")!

    /// The ledger as read for the subscription once `owner` owns it (sql/0016's snapshot): the subscription's buckets
    /// and the owner's, with their rows; the former owner's take-backs noted by key when `noting`.
    static func read(_ ledger: LedgerSnapshot, owner: AccountID, derivation: Lifecycle.Derivation, noting: Bool) -> LedgerSnapshot {
        let buckets = ledger.buckets.values.filter { $0.originalTransactionId == Base.subscription || $0.accountId == owner }
        let keys = Set(buckets.map(\.key))
        var read = LedgerSnapshot(buckets: buckets, entries: ledger.entries.filter { keys.contains($0.bucket) })
        if noting {
            let wanted = Set(SubscriptionCredits.takeBackKeys(of: derivation, formerOwners: [Base.account], catalogue: Base.catalogue))
            read.noteTakenElsewhere(
                ledger.entries.filter { wanted.contains($0.operationKey) }.map { .init(entry: $0, meter: ledger.buckets[$0.bucket]!.meter) })
        }
        return read
    }

    @Test(
        "window 10, the first owner's top-up 0–6, 0–16 spent, last month refunded at 10/50/90 %, then claimed by an account with 0 or 3 of its own: the new owner keeps the window's rest and its own, and a second derivation posts nothing"
    )
    func claimedAfterTheClawBack() throws {
        var cases = 0
        var fromTopUp = 0
        for extra in Int64(0)...6 {
            for spent in Int64(0)...(10 + extra) {
                for percentage: Int32 in [10_000, 50_000, 90_000] {
                    for own in [Int64(0), 3] {
                        cases += 1
                        let label = "top-up \(extra), spent \(spent), refunded at \(percentage / 1000) %, own \(own)"
                        var (world, renewedAt) = Base.World.renewed()
                        let now = Base.date(renewedAt + Base.day)
                        world.support(extra)
                        world.support(own, to: Self.newOwner)
                        _ = world.take("spend:s", spent, at: now)
                        let refund = Base.period(0, signed: renewedAt + 2 * Base.day, refundedAt: percentage)
                        world.deliver(refund, now: Base.date(refund.signedDate))
                        // By hand: the window's rest, then the top-up's, go to what the claw-back owes.
                        let owed = Proration.clawback(granted: 10, milliPercent: percentage)
                        let window = 10 - min(spent, 10)
                        let windowLeft = window - min(owed, window)
                        let topUpLeft = (extra - max(spent - 10, 0)) - min(owed - min(owed, window), extra - max(spent - 10, 0))
                        if topUpLeft < extra - max(spent - 10, 0) { fromTopUp += 1 }
                        #expect(world.live(at: now).reduce(0) { $0 + $1.balance } == windowLeft + topUpLeft, "\(label): before the claim")

                        // Claimed by the new owner (a client-posted transaction under the transfer policy).
                        var transaction = Base.period(1, signed: renewedAt).transaction
                        transaction.signedDate = refund.signedDate + Base.day
                        world.facts.merge(try #require(SubscriptionEvent(claimOf: transaction, by: Self.newOwner)))
                        let derivation = try #require(world.derivation)
                        #expect(derivation.state.accountId == Self.newOwner, "\(label)")
                        let claimedAt = Base.date(transaction.signedDate!)
                        var read = Self.read(world.ledger, owner: Self.newOwner, derivation: derivation, noting: true)
                        let due = SubscriptionCredits.operationsDue(derivation, catalogue: Base.catalogue, ledger: read, now: claimedAt)
                        #expect(
                            !due.contains {
                                if case .post(let entry, _) = $0 { return entry.operationKey.hasPrefix("clawback:") }
                                return false
                            }, "\(label): clawed back again: \(due)")
                        for operation in due {
                            world.ledger.apply(operation)
                            read.apply(operation)
                        }
                        let newOwners = read.liveBuckets(account: Self.newOwner, cycleOf: [Base.subscription], meter: "ai", at: now)
                        #expect(newOwners.reduce(0) { $0 + read.balance(of: $1.key) } == windowLeft + own, "\(label): the new owner")
                        #expect(world.ledger.balance(of: Base.topUp) == topUpLeft, "\(label): the first owner's top-up")
                        let again = SubscriptionCredits.operationsDue(derivation, catalogue: Base.catalogue, ledger: read, now: claimedAt)
                        #expect(again.isEmpty, "\(label): a second derivation posts \(again)")
                    }
                }
            }
        }
        #expect(cases == 588 && fromTopUp > 100, "\(cases) cases, \(fromTopUp) took from the first owner's top-up")
    }

    @Test(
        "the keys looked up are those the claw-back writes on a former owner's top-up: one per prorated refund, former owner and meter; none without a prorated refund"
    )
    func keys() throws {
        var (world, renewedAt) = Base.World.renewed()
        let now = Base.date(renewedAt + Base.day)
        world.support(6)
        _ = world.take("spend:s", 9, at: now)
        let plain = try #require(world.derivation)
        #expect(!SubscriptionCredits.hasClawBacks(plain))
        #expect(SubscriptionCredits.takeBackKeys(of: plain, formerOwners: [Base.account], catalogue: Base.catalogue).isEmpty)
        let refund = Base.period(0, signed: renewedAt + 2 * Base.day, refundedAt: 50_000)
        world.deliver(refund, now: Base.date(refund.signedDate))
        let refunded = try #require(world.derivation)
        #expect(SubscriptionCredits.hasClawBacks(refunded))
        let keys = SubscriptionCredits.takeBackKeys(of: refunded, formerOwners: [Base.account, Self.newOwner], catalogue: Base.catalogue)
        // Last month is billing period `<subscription>.0` (its webOrderLineItemId); 5 owed, the window's 1, then 4 of
        // the top-up's 6.
        #expect(
            keys == [
                "clawback:\(Base.subscription).0:\(refund.signedDate):topup:\(Base.account.text):ai",
                "clawback:\(Base.subscription).0:\(refund.signedDate):topup:\(Self.newOwner.text):ai",
            ])
        #expect(world.ledger.entries.first { $0.operationKey == keys[0] }?.delta == -4)
        #expect(world.ledger.entries.first { $0.operationKey == keys[0] }?.bucket == Base.topUp)
    }
}
