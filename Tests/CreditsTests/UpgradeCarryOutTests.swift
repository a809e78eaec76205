import Credits
import Foundation
import Subscriptions
import Testing

/// An upgrade (`upgrade_credits: prorate`) while credits of the old window are out — held for a model call, or spent
/// and given back later — exhaustively over a few amounts, with the rules alone (the walkthrough's Pro → Max upgrade,
/// DerivedStateCreditTests). Expectations by hand, as the customer sees them: the old window's credits the work did not
/// use end in the top-ups, whether the hold ended (and the spend came back) before the upgrade reached the server or
/// after it — also when every credit left was out at the switch, where they lapsed before (docs/credits.md, "Where
/// credits go back"). Where a hold's end or a spend's reversal sends its credits is decided as the group's read decides
/// it (sql/0057; its SQL is tested on PostgreSQL in HoldDestinationTests and UpgradeWhileHeldTests).
@Suite("Upgrades: the old window's credits out at the switch follow the carry-over")
struct UpgradeCarryOutTests {
    typealias Walkthrough = DerivedStateCreditTests
    static let topUp = CreditBucket.topUp(account: Walkthrough.account, meter: "ai_requests").key
    static let workedAt = Walkthrough.date(Walkthrough.subscribedAt + Walkthrough.minute)
    static let afterUpgrade = Walkthrough.date(Walkthrough.upgradedAt + Walkthrough.minute)

    @Test(
        "spent 0, 100 or 600 of Pro's 1,000, a hold of 1 to all that is left charged in part or whole, the spend given back or not: the top-ups end with what the work left, in either order; a second derivation posts nothing"
    )
    func eitherOrder() throws {
        var cases = 0
        var emptied = 0
        for spent in [Int64(0), 100, 600] {
            for held in Set([Int64(1), 200, 1000 - spent]).sorted() {
                for charge in Set([Int64(0), 1, held / 2, held]).sorted() {
                    for givenBack in spent > 0 ? [false, true] : [false] {
                        cases += 1
                        let label = "spent \(spent), held \(held), charged \(charge), spend given back: \(givenBack)"
                        var ends: [Bool: [String: Int64]] = [:]
                        for endsFirst in [true, false] {
                            var world = Walkthrough.World()
                            world.deliver(Walkthrough.subscribe, now: Walkthrough.date(Walkthrough.subscribedAt))
                            let window = try #require(
                                world.ledger.liveBuckets(
                                    account: Walkthrough.account, cycleOf: [Walkthrough.subscription], meter: "ai_requests", at: Self.workedAt
                                ).first { $0.kind == .cycle })
                            #expect(world.ledger.balance(of: window.key) == 1000, "\(label): Pro's window")
                            let spend = Self.take("spend:s", spent, from: window.key, in: &world.ledger)
                            let hold = Self.take("hold:h", held, from: window.key, in: &world.ledger)
                            if endsFirst { Self.end("hold:h", hold, charge: charge, at: Self.workedAt, in: &world.ledger) }
                            world.deliver(Walkthrough.upgrade, now: Walkthrough.date(Walkthrough.upgradedAt))
                            if !endsFirst {
                                if world.ledger.isPosted("pending:carry:\(world.upgradeKey):\(window.key):out") { emptied += 1 }
                                Self.end("hold:h", hold, charge: charge, at: Self.afterUpgrade, in: &world.ledger)
                            }
                            if givenBack { Self.end("spend:s", spend, charge: 0, at: Self.afterUpgrade, in: &world.ledger) }
                            for (bucket, balance) in world.balances { #expect(balance >= 0, "\(label): \(bucket) below zero") }
                            ends[endsFirst] = world.balances.filter { $0.value != 0 }
                            // By hand: Pro's 1,000 less what was spent (unless given back) and what the work cost.
                            let byHand = 1000 - (givenBack ? 0 : spent) - charge
                            #expect(
                                world.ledger.balance(of: Self.topUp) == byHand,
                                "\(label), the hold ended \(endsFirst ? "before" : "after") the upgrade")
                            let again = SubscriptionCredits.operationsDue(
                                try #require(world.derivation), catalogue: Walkthrough.catalogue, ledger: world.ledger,
                                now: Self.afterUpgrade.addingTimeInterval(60))
                            #expect(again.isEmpty, "\(label): a second derivation posts \(again)")
                        }
                        #expect(ends[true] == ends[false], "\(label): \(ends)")
                    }
                }
            }
        }
        // The case that lapsed before: everything left of the window out at the switch.
        #expect(cases == 50 && emptied == 20, "\(cases) cases, \(emptied) with the window empty at the switch")
    }

    @Test(
        "the carry for credits out is made only in the pass that closes the window: an upgrade applied by the release before (no such carry) gains none at its next derivation"
    )
    func onlyAtTheSwitch() throws {
        var world = Walkthrough.World()
        world.deliver(Walkthrough.subscribe, now: Walkthrough.date(Walkthrough.subscribedAt))
        let window = try #require(world.ledger.buckets.values.first { $0.kind == .cycle })
        _ = Self.take("spend:s", 1000, from: window.key, in: &world.ledger)
        var before = world
        world.deliver(Walkthrough.upgrade, now: Walkthrough.date(Walkthrough.upgradedAt))
        #expect(world.ledger.entries.filter { $0.operationKey.hasPrefix("pending:") }.count == 2, "the spend is out at the switch")
        // The release before posted the same pass without the carry for credits out.
        before.facts.merge(Walkthrough.upgrade)
        let derivation = try #require(before.derivation)
        let upgradedAt = Walkthrough.date(Walkthrough.upgradedAt)
        for operation in SubscriptionCredits.operationsDue(derivation, catalogue: Walkthrough.catalogue, ledger: before.ledger, now: upgradedAt) {
            if case .post(let entry, _) = operation, entry.reason == "upgrade carry-over of credits out" { continue }
            before.ledger.apply(operation)
        }
        let again = SubscriptionCredits.operationsDue(
            derivation, catalogue: Walkthrough.catalogue, ledger: before.ledger, now: Self.afterUpgrade.addingTimeInterval(86_400))
        #expect(again.isEmpty, "a later derivation posts \(again)")
    }

    @Test(
        "the upgrade refunded: the top-ups keep none of Pro's credits (a pack bought before keeps its own), whether the hold ended before the upgrade, between it and the refund, or after the refund"
    )
    func upgradeRefunded() throws {
        var cases = 0
        for spent in [Int64(0), 600] {
            for held in Set([Int64(200), 1000 - spent]).sorted() {
                for charge in Set([Int64(0), held / 2, held]).sorted() {
                    for pack in [false, true] {
                        cases += 1
                        let label = "spent \(spent), held \(held), charged \(charge), a pack: \(pack)"
                        for ending in ["before the upgrade", "before the refund", "after the refund"] {
                            var world = Walkthrough.World()
                            world.deliver(Walkthrough.subscribe, now: Walkthrough.date(Walkthrough.subscribedAt))
                            if pack {
                                let sale = TopUpCredits.Sale(id: "q", productId: "credits.100", quantity: 1, revoked: false)
                                for operation in TopUpCredits.operationsDue(
                                    sale, account: Walkthrough.account, catalogue: Walkthrough.catalogue, ledger: world.ledger)
                                {
                                    world.ledger.apply(operation)
                                }
                            }
                            let window = try #require(world.ledger.buckets.values.first { $0.kind == .cycle })
                            _ = Self.take("spend:s", spent, from: window.key, in: &world.ledger)
                            let hold = Self.take("hold:h", held, from: window.key, in: &world.ledger)
                            if ending == "before the upgrade" { Self.end("hold:h", hold, charge: charge, at: Self.workedAt, in: &world.ledger) }
                            world.deliver(Walkthrough.upgrade, now: Walkthrough.date(Walkthrough.upgradedAt))
                            if ending == "before the refund" { Self.end("hold:h", hold, charge: charge, at: Self.afterUpgrade, in: &world.ledger) }
                            world.deliver(Walkthrough.exactRefund, now: Walkthrough.date(Walkthrough.refundedAt))
                            if ending == "after the refund" {
                                Self.end("hold:h", hold, charge: charge, at: Walkthrough.date(Walkthrough.refundedAt + 1000), in: &world.ledger)
                            }
                            for (bucket, balance) in world.balances { #expect(balance >= 0, "\(label), ended \(ending): \(bucket) below zero") }
                            // By hand: Apple refunded the upgrade, so the customer keeps neither it nor Pro's unused credits.
                            #expect(world.ledger.balance(of: Self.topUp) == (pack ? 100 : 0), "\(label), the hold ended \(ending)")
                            let again = SubscriptionCredits.operationsDue(
                                try #require(world.derivation), catalogue: Walkthrough.catalogue, ledger: world.ledger,
                                now: Walkthrough.date(Walkthrough.refundedAt + 60_000))
                            #expect(again.isEmpty, "\(label), ended \(ending): a second derivation posts \(again)")
                        }
                    }
                }
            }
        }
        #expect(cases == 24, "\(cases) cases")
    }

    /// Apple's REFUND_REVERSED of the upgrade's transaction (``DerivedStateCreditTests/exactRefund``), a minute after
    /// the refund.
    static let reversal = Walkthrough.notification(
        "REFUND_REVERSED", nil, status: 1, product: "max.monthly", from: Walkthrough.upgradedAt, to: Walkthrough.upgradedAt + Walkthrough.period,
        at: Walkthrough.refundedAt + Walkthrough.minute)

    @Test(
        "the upgrade refunded and the refund reversed: the top-ups end as if there had been no refund (Pro's 1,000 less the charge, a pack's own beside), whether the hold ended before the upgrade, before the refund, while it stood or after its reversal, with the spend given back at the end"
    )
    func upgradeRefundReversed() throws {
        let reversedAt = Walkthrough.date(Walkthrough.refundedAt + Walkthrough.minute)
        var cases = 0
        for spent in [Int64(0), 600] {
            for held in Set([Int64(200), 1000 - spent]).sorted() {
                for charge in Set([Int64(0), held / 2, held]).sorted() {
                    for pack in [false, true] {
                        cases += 1
                        let label = "spent \(spent), held \(held), charged \(charge), a pack: \(pack)"
                        for ending in ["before the upgrade", "before the refund", "while the refund stood", "after its reversal"] {
                            var world = Walkthrough.World()
                            world.deliver(Walkthrough.subscribe, now: Walkthrough.date(Walkthrough.subscribedAt))
                            if pack {
                                let sale = TopUpCredits.Sale(id: "q", productId: "credits.100", quantity: 1, revoked: false)
                                for operation in TopUpCredits.operationsDue(
                                    sale, account: Walkthrough.account, catalogue: Walkthrough.catalogue, ledger: world.ledger)
                                {
                                    world.ledger.apply(operation)
                                }
                            }
                            let window = try #require(world.ledger.buckets.values.first { $0.kind == .cycle })
                            let spend = Self.take("spend:s", spent, from: window.key, in: &world.ledger)
                            let hold = Self.take("hold:h", held, from: window.key, in: &world.ledger)
                            if ending == "before the upgrade" { Self.end("hold:h", hold, charge: charge, at: Self.workedAt, in: &world.ledger) }
                            world.deliver(Walkthrough.upgrade, now: Walkthrough.date(Walkthrough.upgradedAt))
                            if ending == "before the refund" { Self.end("hold:h", hold, charge: charge, at: Self.afterUpgrade, in: &world.ledger) }
                            world.deliver(Walkthrough.exactRefund, now: Walkthrough.date(Walkthrough.refundedAt))
                            if ending == "while the refund stood" {
                                Self.end("hold:h", hold, charge: charge, at: Walkthrough.date(Walkthrough.refundedAt + 1000), in: &world.ledger)
                            }
                            // While the refund stands the customer keeps none of Pro's credits, what came back included.
                            #expect(world.ledger.balance(of: Self.topUp) == (pack ? 100 : 0), "\(label), ended \(ending): refunded")
                            world.deliver(Self.reversal, now: reversedAt)
                            if ending == "after its reversal" {
                                Self.end("hold:h", hold, charge: charge, at: reversedAt.addingTimeInterval(1), in: &world.ledger)
                            }
                            Self.end("spend:s", spend, charge: 0, at: reversedAt.addingTimeInterval(2), in: &world.ledger)
                            for (bucket, balance) in world.balances { #expect(balance >= 0, "\(label), ended \(ending): \(bucket) below zero") }
                            // By hand: the refund reversed, Pro's unused credits are the customer's, in the top-ups.
                            #expect(
                                world.ledger.balance(of: Self.topUp) == 1000 - charge + (pack ? 100 : 0), "\(label), the hold ended \(ending)")
                            let again = SubscriptionCredits.operationsDue(
                                try #require(world.derivation), catalogue: Walkthrough.catalogue, ledger: world.ledger,
                                now: reversedAt.addingTimeInterval(60))
                            #expect(again.isEmpty, "\(label), ended \(ending): a second derivation posts \(again)")
                        }
                    }
                }
            }
        }
        #expect(cases == 24, "\(cases) cases")
    }

    @Test(
        "a claw-back's claim waits on the window's held credits: no carry is made for them (coming back there they pay it first); the customer never ends with more than had the hold ended first"
    )
    func claimOnTheWindow() throws {
        var ends: [Bool: Int64] = [:]
        for endsFirst in [true, false] {
            let (start, window, hold) = try Self.allHeld()
            var world = start
            // An earlier period refunded at 50 % while all of it is held, as SubscriptionCredits' clawBack writes it.
            for operation in CreditClaims.takeBack(
                "clawback:p0:1:\(window.key)", bucket: window.key, owed: 500, available: 0, reason: "prorated refund")
            {
                world.ledger.apply(operation)
            }
            if endsFirst { Self.end("hold:h", hold, charge: 0, at: Self.workedAt, in: &world.ledger) }
            world.deliver(Walkthrough.upgrade, now: Walkthrough.date(Walkthrough.upgradedAt))
            #expect(!world.ledger.entries.contains { $0.operationKey.hasPrefix("pending:") }, "ended first: \(endsFirst)")
            if !endsFirst { Self.end("hold:h", hold, charge: 0, at: Self.afterUpgrade, in: &world.ledger) }
            ends[endsFirst] = world.ledger.balance(of: Self.topUp)
        }
        // By hand, released first: the 1,000 pay the claim's 500 and the rest is carried. Released after, they lapse
        // with the window (documented).
        #expect(ends[true] == 500 && ends[false] == 0, "\(ends)")
    }

    @Test(
        "a refund naming a period 251 ms off the upgrade (simulate's, from whole seconds) makes the carry stale: with the window's credits all held, it is reversed and they end as had they come back first"
    )
    func staleCarry() throws {
        var ends: [Bool: Int64] = [:]
        for endsFirst in [true, false] {
            let (start, _, hold) = try Self.allHeld()
            var world = start
            if endsFirst { Self.end("hold:h", hold, charge: 0, at: Self.workedAt, in: &world.ledger) }
            world.deliver(Walkthrough.upgrade, now: Walkthrough.date(Walkthrough.upgradedAt))
            world.deliver(Walkthrough.refund, now: Walkthrough.date(Walkthrough.refundedAt))
            if !endsFirst { Self.end("hold:h", hold, charge: 0, at: Walkthrough.date(Walkthrough.refundedAt + 1000), in: &world.ledger) }
            for (bucket, balance) in world.balances { #expect(balance >= 0, "ended first: \(endsFirst): \(bucket) below zero") }
            let again = SubscriptionCredits.operationsDue(
                try #require(world.derivation), catalogue: Walkthrough.catalogue, ledger: world.ledger,
                now: Walkthrough.date(Walkthrough.refundedAt + 60_000))
            #expect(again.isEmpty, "ended first: \(endsFirst): a second derivation posts \(again)")
            ends[endsFirst] = world.ledger.balance(of: Self.topUp)
        }
        // By hand: the upgrade refunded (DerivedStateCreditTests.everyOrder: no top-ups left), the customer keeps none.
        #expect(ends[true] == 0 && ends[false] == 0, "\(ends)")
    }

    @Test(
        "the upgrade's carry spent whole, then a copy of the upgrade 251 ms off makes it stale: nothing is left to move back, yet the carry ends — a pack of 500 bought since stays in the top-ups through a later derivation and Pro's month refunded, and nothing more is due"
    )
    func staleSpentCarry() throws {
        var world = Walkthrough.World()
        world.deliver(Walkthrough.subscribe, now: Walkthrough.date(Walkthrough.subscribedAt))
        world.deliver(Walkthrough.upgrade, now: Walkthrough.date(Walkthrough.upgradedAt))
        let carried = world.ledger.balance(of: Self.topUp)
        #expect(carried == 1000, "Pro's window carried whole")
        _ = Self.take("spend:t", carried, from: Self.topUp, in: &world.ledger)
        world.deliver(Walkthrough.refund, now: Walkthrough.date(Walkthrough.refundedAt))
        let out = try #require(world.ledger.entries.first { $0.operationKey.hasPrefix("carry:") && $0.operationKey.hasSuffix(":out") })
        #expect(world.ledger.isPosted("reversed:\(out.operationKey)"), "the stale carry ends though it moves nothing back")
        #expect(world.ledger.balance(of: out.bucket) == 0 && world.ledger.balance(of: Self.topUp) == 0)
        world.ledger.apply(.post(LedgerEntry(operationKey: "topup:pack", bucket: Self.topUp, delta: 500, reason: "top-up"), opening: nil))
        // By hand: the pack is the customer's, whatever is derived later. Before 2026-12-05 every later derivation
        // reversed the carry again and moved the pack into Pro's closed window, and Pro's refund took it as the carry.
        world.settle(now: Walkthrough.date(Walkthrough.refundedAt + Walkthrough.minute))
        #expect(world.ledger.balance(of: Self.topUp) == 500, "after a later derivation")
        let proRefundedAt = Walkthrough.refundedAt + 2 * Walkthrough.minute
        world.deliver(
            UpgradeBothEndsRefundedTests.proMonth("REFUND", at: proRefundedAt, revoked: true, maxRefunded: true),
            now: Walkthrough.date(proRefundedAt))
        #expect(world.ledger.balance(of: Self.topUp) == 500, "after Pro's month refunded")
        for (bucket, balance) in world.balances { #expect(balance >= 0, "\(bucket) below zero") }
        let again = SubscriptionCredits.operationsDue(
            try #require(world.derivation), catalogue: Walkthrough.catalogue, ledger: world.ledger,
            now: Walkthrough.date(proRefundedAt + Walkthrough.minute))
        #expect(again.isEmpty, "a second derivation posts \(again)")
    }

    @Test(
        "all of Pro's window held, Pro's month refunded after the upgrade, learnt before or after it, then reversed, then the hold released: none in the top-ups while the refund stands, the 1,000 there after, in both orders (found by review: the refund's mark of the window all out stopped the carry)"
    )
    func refundLearntBeforeTheUpgrade() throws {
        var ends: [Bool: Int64] = [:]
        for refundFirst in [true, false] {
            let (start, _, hold) = try Self.allHeld()
            var world = start
            let refundedAt = Walkthrough.refundedAt
            let refund = UpgradeBothEndsRefundedTests.proMonth("REFUND", at: refundedAt, revoked: true, maxRefunded: false)
            if refundFirst { world.deliver(refund, now: Walkthrough.date(refundedAt)) }
            world.deliver(Walkthrough.upgrade, now: Walkthrough.date(refundFirst ? refundedAt : Walkthrough.upgradedAt))
            if !refundFirst { world.deliver(refund, now: Walkthrough.date(refundedAt)) }
            #expect(world.ledger.balance(of: Self.topUp) == 0, "refund first: \(refundFirst): while the refund stands")
            let reversedAt = refundedAt + Walkthrough.minute
            world.deliver(
                UpgradeBothEndsRefundedTests.proMonth("REFUND_REVERSED", at: reversedAt, revoked: false, maxRefunded: false),
                now: Walkthrough.date(reversedAt))
            Self.end("hold:h", hold, charge: 0, at: Walkthrough.date(reversedAt + 1000), in: &world.ledger)
            for (bucket, balance) in world.balances { #expect(balance >= 0, "refund first: \(refundFirst): \(bucket) below zero") }
            let again = SubscriptionCredits.operationsDue(
                try #require(world.derivation), catalogue: Walkthrough.catalogue, ledger: world.ledger,
                now: Walkthrough.date(reversedAt + Walkthrough.minute))
            #expect(again.isEmpty, "refund first: \(refundFirst): a second derivation posts \(again)")
            ends[refundFirst] = world.ledger.balance(of: Self.topUp)
        }
        // By hand: the refund reversed, as if never refunded — the held 1,000 follow the carry (UpgradeWhileHeldTests).
        #expect(ends[true] == 1000 && ends[false] == 1000, "\(ends)")
    }

    /// Pro bought, and all of its window's 1,000 held (`hold:h`).
    static func allHeld() throws -> (Walkthrough.World, CreditBucket, [HoldSettlement.Debit]) {
        var world = Walkthrough.World()
        world.deliver(Walkthrough.subscribe, now: Walkthrough.date(Walkthrough.subscribedAt))
        let window = try #require(world.ledger.buckets.values.first { $0.kind == .cycle })
        let hold = take("hold:h", 1000, from: window.key, in: &world.ledger)
        return (world, window, hold)
    }

    /// Debits of `amount` from `bucket` (`<keyed>:0`), as a spend or a hold posts them.
    static func take(_ keyed: String, _ amount: Int64, from bucket: String, in ledger: inout LedgerSnapshot) -> [HoldSettlement.Debit] {
        guard amount > 0 else { return [] }
        ledger.apply(.post(LedgerEntry(operationKey: "\(keyed):0", bucket: bucket, delta: -amount, reason: "debit"), opening: nil))
        return [.init(bucket: bucket, amount: amount)]
    }

    /// A hold's end (or a spend given back, `charge` 0) as its group writes it: each debit's rest to the top-up of a
    /// carry-over made from its bucket after the debit while the carry stands, and taken there by a refund of the
    /// upgrade that took the carry and stands; else to the bucket while it is live; else nowhere (sql/0064's
    /// `carriedTo`, `carryTakenBy` and `open`, and the rules' ``CreditHold/destinations(_:open:account:)`` and
    /// ``CreditHold/refundTakes(of:debits:since:account:key:)``).
    static func end(_ keyed: String, _ debits: [HoldSettlement.Debit], charge: Int64, at now: Date, in ledger: inout LedgerSnapshot) {
        guard !debits.isEmpty else { return }
        let live = Set(
            ledger.liveBuckets(account: Walkthrough.account, cycleOf: [Walkthrough.subscription], meter: nil, at: now).map(\.key))
        let since = debits.map { debit in
            var bucket = CreditHold.BucketSince(
                bucket: debit.bucket, kind: ledger.buckets[debit.bucket]?.kind.text, open: live.contains(debit.bucket),
                owner: Walkthrough.account.text)
            let carry = ledger.entries.drop { $0.operationKey != "\(keyed):0" }.last { row in
                guard row.bucket == debit.bucket, row.operationKey.hasPrefix("carry:"), row.operationKey.hasSuffix(":out") else { return false }
                let inKey = String(row.operationKey.dropLast("out".count)) + "in"
                return ledger.isPosted(inKey) && !ledger.isPosted("reversed:\(inKey)") && !ledger.isPosted("reversed:\(row.operationKey)")
            }
            if let carry, let carriedIn = ledger.entries.first(where: { $0.operationKey == String(carry.operationKey.dropLast("out".count)) + "in" })
            {
                bucket.carriedTo = carriedIn.bucket
                bucket.carryTakenBy =
                    ledger.entries(of: carriedIn.bucket).last { row in
                        row.operationKey.hasPrefix("refund:") && row.operationKey.hasSuffix(":\(carriedIn.operationKey)")
                            && !ledger.isPosted("reversed:\(row.operationKey)")
                    }?.operationKey
            }
            return bucket
        }
        let destinations = CreditHold.destinations(since, open: live, account: Walkthrough.account)
        // The unpaid claims made since the debit on where its credits go (sql/0038's rules, CreditClaimsTests).
        let claims = CreditClaimsTests.claims(after: "\(keyed):0", in: ledger)
        let claimsOn = { (bucket: String) in claims.filter { claim in ledger.entries.first { $0.operationKey == claim.key }?.bucket == bucket } }
        let outcome = HoldSettlement.settle(debits, charge: charge, destination: { destinations[$0] }, claims: claimsOn)!
        let rows = CreditHold.rowsAsWritten(
            keyed, debits: debits, outcome: outcome, since: since, account: Walkthrough.account, meter: "ai_requests", at: now)
        for row in rows { ledger.apply(.post(row, opening: nil)) }
    }
}

extension DerivedStateCreditTests.World {
    /// The upgrade's billing period key, as the carry-over's rows name it.
    var upgradeKey: String {
        derivation?.periods.first { $0.upgradedFrom != nil }?.key ?? ""
    }
}
