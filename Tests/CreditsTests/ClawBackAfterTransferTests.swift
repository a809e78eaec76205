import AppStoreModels
import Credits
import Foundation
import Subscriptions
import Testing

/// A claw-back (an earlier period refunded at a percentage) that took from the owner's top-up, then the subscription
/// claimed by another account: the new owner's credits are not clawed back again, also when Apple signs the refund
/// again at another date. The ledger a derivation reads holds the subscription's buckets and its owner's, so after the
/// move the first owner's take-backs are out of sight unless looked up (`CreditLedger.noteTakenElsewhere` on
/// PostgreSQL: the former owners' top-ups, their take-backs of the period; ``LedgerSnapshot/noteTakenElsewhere(_:)``).
/// Expectations worked by hand from what each customer had.
@Suite("Claw-backs: a subscription that changed hands is not clawed back again from its new owner")
struct ClawBackAfterTransferTests {
    typealias Base = ClawBackClaimsTests
    static let newOwner = AccountID("clawback-new-owner")!

    /// The ledger as read for the subscription once `owner` owns it: the subscription's buckets and the owner's, with
    /// their rows (sql/0016), and, when `noting`, what `CreditLedger.noteTakenElsewhere` finds: on the former owner's
    /// top-ups, the take-backs of the periods with a prorated refund, now or once, and their claims' rows, each marked
    /// when it was reversed.
    static func read(_ ledger: LedgerSnapshot, owner: AccountID, derivation: Lifecycle.Derivation, noting: Bool) -> LedgerSnapshot {
        let buckets = ledger.buckets.values.filter { $0.originalTransactionId == Base.subscription || $0.accountId == owner }
        let keys = Set(buckets.map(\.key))
        var read = LedgerSnapshot(buckets: buckets, entries: ledger.entries.filter { keys.contains($0.bucket) })
        guard noting else { return read }
        let prefixes = SubscriptionCredits.clawBackPrefixes(of: derivation)
        let found = ledger.entries.filter { entry in
            ledger.buckets[entry.bucket].map { $0.kind == .topUp && $0.accountId == Base.account } == true
                && prefixes.contains { entry.operationKey.hasPrefix($0) || entry.operationKey.hasPrefix("claim:" + $0) }
        }
        read.noteTakenElsewhere(
            found.map { .init(entry: $0, meter: ledger.buckets[$0.bucket]!.meter, reversed: ledger.isPosted("reversed:\($0.operationKey)")) })
        return read
    }

    /// The sum of the meter's credits in every bucket of the world: the two owners' top-ups and the windows.
    static func everyone(_ ledger: LedgerSnapshot) -> Int64 {
        ledger.buckets.values.filter { $0.meter == "ai" && $0.kind != .daily }.reduce(0) { $0 + ledger.balance(of: $1.key) }
    }

    @Test(
        "window 10, the first owner's top-up 0–6, 0–16 spent, last month refunded at 10/50/90 %, claimed by an account with 0 or 3 of its own, then the refund signed again at another date: the new owner keeps the window's rest and its own, nothing is taken twice, a second derivation posts nothing"
    )
    func claimedAfterTheClawBack() throws {
        var cases = 0
        var fromTopUp = 0
        var twiceWithoutTheLookUp = 0
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
                        let topUp = extra - max(spent - 10, 0)
                        let fromWindow = min(owed, window)
                        let fromTheTopUp = min(owed - fromWindow, topUp)
                        if fromTheTopUp > 0 { fromTopUp += 1 }
                        #expect(
                            world.live(at: now).reduce(0) { $0 + $1.balance } == window - fromWindow + topUp - fromTheTopUp,
                            "\(label): before the claim")

                        // Claimed by the new owner (a client-posted transaction under the transfer policy).
                        var transaction = Base.period(1, signed: renewedAt).transaction
                        transaction.signedDate = refund.signedDate + Base.day
                        world.facts.merge(try #require(SubscriptionEvent(claimOf: transaction, by: Self.newOwner)))
                        let derivation = try #require(world.derivation)
                        #expect(derivation.state.accountId == Self.newOwner, "\(label)")
                        let claimedAt = Base.date(transaction.signedDate!)
                        let blind = SubscriptionCredits.operationsDue(
                            derivation, catalogue: Base.catalogue,
                            ledger: Self.read(world.ledger, owner: Self.newOwner, derivation: derivation, noting: false),
                            now: claimedAt)
                        if !blind.isEmpty { twiceWithoutTheLookUp += 1 }
                        var read = Self.read(world.ledger, owner: Self.newOwner, derivation: derivation, noting: true)
                        let due = SubscriptionCredits.operationsDue(derivation, catalogue: Base.catalogue, ledger: read, now: claimedAt)
                        #expect(due.isEmpty, "\(label): clawed back again: \(due)")
                        let newOwners = read.liveBuckets(account: Self.newOwner, cycleOf: [Base.subscription], meter: "ai", at: now)
                        #expect(newOwners.reduce(0) { $0 + read.balance(of: $1.key) } == window - fromWindow + own, "\(label): the new owner")
                        #expect(world.ledger.balance(of: Base.topUp) == topUp - fromTheTopUp, "\(label): the first owner's top-up")

                        // Apple signs the refund again at another date, after the move: the window's take is given back
                        // and taken again; what the first owner's top-up lost counts, so the new owner pays only what was
                        // never taken (owed beyond the window and the first owner's top-up), never the whole again.
                        let again = Base.period(0, signed: refund.signedDate + 2 * Base.day, refundedAt: percentage)
                        world.facts.merge(again)
                        let restamped = try #require(world.derivation)
                        let before = Self.everyone(world.ledger)
                        read = Self.read(world.ledger, owner: Self.newOwner, derivation: restamped, noting: true)
                        for operation in SubscriptionCredits.operationsDue(
                            restamped, catalogue: Base.catalogue, ledger: read, now: Base.date(again.signedDate))
                        {
                            world.ledger.apply(operation)
                            read.apply(operation)
                        }
                        let lost = (before + fromWindow) - Self.everyone(world.ledger)
                        #expect(lost == min(owed - fromTheTopUp, window + own), "\(label): taken again at the new date: \(lost)")
                        read = Self.read(world.ledger, owner: Self.newOwner, derivation: restamped, noting: true)
                        let once = SubscriptionCredits.operationsDue(
                            restamped, catalogue: Base.catalogue, ledger: read, now: Base.date(again.signedDate))
                        #expect(once.isEmpty, "\(label): a second derivation posts \(once)")
                    }
                }
            }
        }
        #expect(cases == 588 && fromTopUp > 100, "\(cases) cases, \(fromTopUp) took from the first owner's top-up")
        // Without the look-up the rules take again wherever the new owner had credits and the claw-back had reached the
        // first owner's top-up.
        #expect(twiceWithoutTheLookUp > 50, "\(twiceWithoutTheLookUp) cases clawed back twice without the look-up")
    }

    @Test("the prefixes looked up begin every take-back the claw-back writes, at any date; none without a prorated refund")
    func prefixes() throws {
        var (world, renewedAt) = Base.World.renewed()
        let now = Base.date(renewedAt + Base.day)
        world.support(6)
        _ = world.take("spend:s", 9, at: now)
        let plain = try #require(world.derivation)
        #expect(SubscriptionCredits.clawBackPrefixes(of: plain).isEmpty)
        let refund = Base.period(0, signed: renewedAt + 2 * Base.day, refundedAt: 50_000)
        world.deliver(refund, now: Base.date(refund.signedDate))
        let refunded = try #require(world.derivation)
        // Last month is billing period `<subscription>.0` (its webOrderLineItemId); 5 owed, the window's 1, then 4 of
        // the top-up's 6.
        #expect(SubscriptionCredits.clawBackPrefixes(of: refunded) == ["clawback:\(Base.subscription).0:"])
        let takes = world.ledger.entries.filter { $0.operationKey.hasPrefix("clawback:") }
        #expect(takes.count == 2 && takes.allSatisfy { $0.operationKey.hasPrefix("clawback:\(Base.subscription).0:\(refund.signedDate):") })
        #expect(takes.first { $0.bucket == Base.topUp }?.delta == -4)
        // Claimed by an account with 3 of its own: the first owner's take, noted, counts; a neighbour's whose key only
        // begins like it (a period `<period>:9`, another bucket named in the key, no date, a suffix) does not.
        world.support(3, to: Self.newOwner)
        var transaction = Base.period(1, signed: renewedAt).transaction
        transaction.signedDate = refund.signedDate + Base.day
        world.facts.merge(try #require(SubscriptionEvent(claimOf: transaction, by: Self.newOwner)))
        let claimed = try #require(world.derivation)
        let take = try #require(takes.first { $0.bucket == Base.topUp })
        func due(noting key: String) -> [LedgerOperation] {
            var read = Self.read(world.ledger, owner: Self.newOwner, derivation: claimed, noting: false)
            read.noteTakenElsewhere([
                .init(entry: LedgerEntry(operationKey: key, bucket: take.bucket, delta: take.delta, reason: take.reason), meter: "ai")
            ])
            return SubscriptionCredits.operationsDue(claimed, catalogue: Base.catalogue, ledger: read, now: Base.date(transaction.signedDate!))
        }
        #expect(due(noting: take.operationKey).isEmpty)
        // Taken again after the refund changed kind and back (`…:<n>`, SubscriptionCredits.Plan.clawBackKey): counts too.
        #expect(due(noting: take.operationKey + ":1").isEmpty)
        let period = "clawback:\(Base.subscription).0:"
        for key in [
            "\(period)9:\(refund.signedDate):\(Base.topUp)", "\(period)\(refund.signedDate):topup:other:ai", "\(period)\(Base.topUp)",
            "\(period)\(refund.signedDate):\(Base.topUp):x", "\(period)\(refund.signedDate):\(Base.topUp):",
            "\(period)\(refund.signedDate):\(Base.topUp):1x",
        ] {
            #expect(!due(noting: key).isEmpty, "\(key) counted as the first owner's take")
        }
    }
}
