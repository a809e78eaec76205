import AppStoreModels
import Foundation
import Testing

@testable import Credits

/// The refund answer rules, from Apple's documentation of Send Consumption Information: `consumptionPercentage` is in
/// milliunits (0–100 000), consumables only — never for an auto-renewable subscription — and `GRANT_PRORATED` for a
/// consumable needs one above 0.
@Suite("Refund policy")
struct RefundPolicyTests {
    let policy = RefundPolicy(subscriptionDeclineAbovePercent: 50, consumableDeclineAbovePercent: 80)

    func used(_ used: Int64, of credited: Int64) -> PurchaseConsumption {
        PurchaseConsumption(meters: ["ai": .init(credited: credited, used: used)], delivered: true)
    }

    @Test(
        "a consumable: nothing used → GRANT_FULL at 0; some → GRANT_PRORATED with the share; above the line → DECLINE",
        arguments: [
            (0 as Int64, 0 as Int32, "GRANT_FULL"), (1, 1000, "GRANT_PRORATED"), (80, 80_000, "GRANT_PRORATED"), (81, 81_000, "DECLINE"),
            (100, 100_000, "DECLINE"),
        ])
    func consumable(usedCredits: Int64, milliPercent: Int32, preference: String) {
        let answer = policy.answer(for: .consumable, consumption: used(usedCredits, of: 100))
        #expect(answer.consumptionPercentage == milliPercent)
        #expect(answer.refundPreference == preference)
        #expect(answer.deliveryStatus == "DELIVERED" && answer.customerConsented)
        #expect(answer.problems(for: .consumable).isEmpty)
    }

    @Test(
        "a subscription never carries a percentage, whatever was used",
        arguments: [(0 as Int64, "GRANT_FULL"), (500, "GRANT_PRORATED"), (501, "DECLINE")])
    func subscription(usedCredits: Int64, preference: String) {
        let answer = policy.answer(for: .subscription, consumption: used(usedCredits, of: 1000))
        #expect(answer.consumptionPercentage == nil)
        #expect(answer.refundPreference == preference)
        #expect(answer.problems(for: .subscription).isEmpty)
    }

    @Test("the meter used most speaks; more used than credited counts as all; a purchase never credited was not delivered")
    func shares() {
        let both = PurchaseConsumption(meters: ["ai": .init(credited: 1000, used: 100), "exports": .init(credited: 10, used: 9)], delivered: true)
        #expect(both.milliPercent == 90_000)
        #expect(PurchaseConsumption.Meter(credited: 0, used: 3).milliPercent == 100_000)
        #expect(PurchaseConsumption.Meter(credited: 30, used: 45).milliPercent == 100_000)
        #expect(PurchaseConsumption.Meter(credited: 3, used: 1).milliPercent == 33_333)
        let undelivered = policy.answer(for: .consumable, consumption: PurchaseConsumption(meters: [:], delivered: false))
        #expect(undelivered.deliveryStatus == "UNDELIVERED_OTHER" && undelivered.refundPreference == "GRANT_FULL")
        #expect(undelivered.consumptionPercentage == 0)
    }

    @Test("Apple's rules: consent, known values, range, no percentage for subscriptions, GRANT_PRORATED needs a share")
    func problems() {
        var answer = ConsumptionAnswer(
            consumptionPercentage: nil, deliveryStatus: .delivered, refundPreference: .grantProrated, sampleContentProvided: true)
        #expect(answer.problems(for: .subscription).isEmpty)
        #expect(answer.problems(for: .consumable) == ["GRANT_PRORATED needs a consumptionPercentage above 0"])
        answer.consumptionPercentage = 100_001
        #expect(answer.problems(for: .consumable).contains("consumptionPercentage is in milliunits: 0 to 100000"))
        answer.consumptionPercentage = 2500
        #expect(answer.problems(for: .consumable).isEmpty)
        #expect(answer.problems(for: .subscription).count == 1)
        answer.deliveryStatus = "LOST"
        answer.refundPreference = "MAYBE"
        answer.customerConsented = false
        #expect(answer.problems(for: .consumable).count == 3)
    }

    @Test("the answer is due after the app's window, and never later than an hour before Apple's 12 hours")
    func answerAt() {
        let requested = Date(timeIntervalSince1970: 1_800_000_000)
        #expect(RefundPolicy(answerAfter: 600).answerAt(requestedAt: requested) == requested.addingTimeInterval(600))
        #expect(RefundPolicy(answerAfter: 20 * 3600).answerAt(requestedAt: requested) == requested.addingTimeInterval(11 * 3600))
    }

    func entry(_ key: String, _ delta: Int64) -> LedgerEntry {
        LedgerEntry(operationKey: key, bucket: "topup:a:ai", delta: delta, reason: delta < 0 && !key.hasPrefix("refund") ? "usage" : "top-up")
    }

    @Test("top-ups pool in one bucket: spending draws first in, first out, so the older purchase is consumed first")
    func firstInFirstOut() {
        let entries = [
            entry("topup:T1", 100), entry("spend:a:k1:0", -70), entry("topup:T2", 100), entry("spend:a:k2:0", -50),
        ]
        let first = PurchaseConsumption.topUp("T1", meter: "ai", entries: entries)
        let second = PurchaseConsumption.topUp("T2", meter: "ai", entries: entries)
        #expect(first.meters["ai"] == .init(credited: 100, used: 100))
        #expect(second.meters["ai"] == .init(credited: 100, used: 20))
        #expect(PurchaseConsumption.topUp("T3", meter: "ai", entries: entries).delivered == false)
    }

    @Test("a refunded top-up leaves the pool: later spending draws on the others; a reversal puts it back")
    func refundsLeaveThePool() {
        var entries = [
            entry("topup:T1", 100), entry("topup:T2", 100), entry("refund:T1:topup:a:ai", -100), entry("spend:a:k1:0", -30),
        ]
        #expect(PurchaseConsumption.topUp("T1", meter: "ai", entries: entries).meters["ai"]?.used == 0)
        #expect(PurchaseConsumption.topUp("T2", meter: "ai", entries: entries).meters["ai"]?.used == 30)
        entries += [entry("reversed:refund:T1:topup:a:ai", 100), entry("spend:a:k2:0", -40)]
        #expect(PurchaseConsumption.topUp("T1", meter: "ai", entries: entries).meters["ai"]?.used == 40)
    }
}

/// Which spends came from one top-up, when the account's top-up bucket pools several (Play's review sends them).
@Suite("Top-up spends attributed first in, first out")
struct TopUpAttributionTests {
    /// A row of the pooled bucket `b`; the reason is not read.
    static func row(_ key: String, _ delta: Int64) -> LedgerEntry { LedgerEntry(operationKey: key, bucket: "b", delta: delta, reason: "r") }

    @Test("two top-ups and three spends: the first top-up's credits go first; a refund empties its own lot")
    func attribution() {
        let entries = [
            LedgerEntry(operationKey: "topup:A", bucket: "b", delta: 100, reason: "top-up"),
            LedgerEntry(operationKey: "spend:1", bucket: "b", delta: -60, reason: "usage"),
            LedgerEntry(operationKey: "topup:B", bucket: "b", delta: 100, reason: "top-up"),
            LedgerEntry(operationKey: "spend:2", bucket: "b", delta: -70, reason: "usage"),
            LedgerEntry(operationKey: "spend:3", bucket: "b", delta: -20, reason: "usage"),
        ]
        #expect(PurchaseConsumption.attribution(ofTopUp: "A", entries: entries).spends == [1: 60, 3: 40])
        #expect(PurchaseConsumption.attribution(ofTopUp: "B", entries: entries).spends == [3: 30, 4: 20])
        let refunded = [
            entries[0], LedgerEntry(operationKey: "refund:A:b", bucket: "b", delta: -100, reason: "top-up refunded"), entries[2], entries[1],
        ]
        #expect(PurchaseConsumption.attribution(ofTopUp: "A", entries: refunded).spends.isEmpty)
        #expect(PurchaseConsumption.attribution(ofTopUp: "B", entries: refunded).spends == [3: 60])
    }

    @Test(
        "a refunded upgrade's take of a carry made for credits out, marked by two rows that net to nothing, and its reversal: no lot, no spend; the pack's 30 spent after are its own"
    )
    func carryTakeMarkers() {
        let take = "refund:p2:1700000000001:carry:p2:cycle:s:p1:ai:in"
        let entries = [
            Self.row("topup:A", 100),
            Self.row("carry:p2:cycle:s:p1:ai:in", 50), Self.row("pending:carry:p2:cycle:s:p1:ai:in", -50),
            Self.row("refund:p2:1700000000001:pending:carry:p2:cycle:s:p1:ai:in", 50), Self.row(take, -50),
            Self.row("reversed:refund:p2:1700000000001:pending:carry:p2:cycle:s:p1:ai:in", -50), Self.row("reversed:\(take)", 50),
            Self.row("spend:1", -30),
        ]
        #expect(PurchaseConsumption.attribution(ofTopUp: "A", entries: entries).spends == [7: 30])
        // A take that moved credits (no marker beside it) still empties the carry's lot.
        #expect(!PurchaseConsumption.isCarryTakeMarker(take, among: [take]))
        #expect(PurchaseConsumption.isCarryTakeMarker(take, among: Set(entries.map(\.operationKey))))
        #expect(!PurchaseConsumption.isCarryTakeMarker("refund:sale:topup:a:pending:carry:x", among: []), "a pack's refund, whatever its account id")
        // The refund taking again after it changed kind and back (`refund:<stamp>:<n>:…`, SubscriptionCredits' carryTakeKeys).
        let again = "refund:p2:1700000000001:1:carry:p2:cycle:s:p1:ai:in"
        let againMark = "refund:p2:1700000000001:1:pending:carry:p2:cycle:s:p1:ai:in"
        #expect(PurchaseConsumption.isCarryTakeMarker(againMark, among: []))
        #expect(PurchaseConsumption.isCarryTakeMarker(again, among: [again, againMark]))
        #expect(!PurchaseConsumption.isCarryTakeMarker(again, among: [again, "refund:p2:1700000000001:pending:carry:p2:cycle:s:p1:ai:in"]))
        let retaken = entries.dropLast() + [Self.row(againMark, 50), Self.row(again, -50), Self.row("spend:1", -30)]
        #expect(PurchaseConsumption.attribution(ofTopUp: "A", entries: Array(retaken)).spends == [9: 30])
        // A take again that moved credits empties the carry's lot, as the first take does.
        let lot = "carry:p2:cycle:s:p1:ai:in"
        #expect(PurchaseConsumption.lot(takenBy: again, among: [lot]) == lot)
        #expect(PurchaseConsumption.lot(takenBy: "claim:\(again):paid:hold-return:h:0", among: [lot]) == lot)
        #expect(PurchaseConsumption.lot(takenBy: "refund:p2:1700000000001:1x:carry:p2:cycle:s:p1:ai:in", among: [lot]) != lot)
    }

    @Test("a hold settled for 30 of 50 counts as a spend of 30 when it settled; its debit, give-back and offset count for nothing")
    func settledHold() {
        let entries = [
            LedgerEntry(operationKey: "topup:A", bucket: "b", delta: 100, reason: "top-up"),
            LedgerEntry(operationKey: "topup:B", bucket: "b", delta: 100, reason: "top-up"),
            LedgerEntry(operationKey: "hold:h:0", bucket: "b", delta: -50, reason: "hold"),
            LedgerEntry(operationKey: "hold-return:h:0", bucket: "b", delta: 20, reason: "hold returned"),
            LedgerEntry(operationKey: "hold-charge:h:0:offset", bucket: "b", delta: 30, reason: "hold charged"),
            LedgerEntry(operationKey: "hold-charge:h:0", bucket: "b", delta: -30, reason: "usage"),
            LedgerEntry(operationKey: "spend:1", bucket: "b", delta: -80, reason: "usage"),
        ]
        #expect(PurchaseConsumption.attribution(ofTopUp: "A", entries: entries).spends == [5: 30, 6: 70])
        #expect(PurchaseConsumption.attribution(ofTopUp: "B", entries: entries).spends == [6: 10])
    }

    /// A claw-back given back (its refund reversed, or read as full for a while) and taken again under `…:1`
    /// (SubscriptionCredits.clawBackKey) took the customer's credits once: the purchase's consumption counts it once.
    @Test(
        "a claw-back given back and taken again draws on the packs once: its reversal returns to the lots it drew on, the last drawn first"
    )
    func clawBackTakenAgain() {
        let take = "clawback:s.1:1700000000000:b"
        // A's 20: 5 clawed back, given back, taken again (15 left); a spend of 10 draws on A's 15.
        let once = [
            Self.row("topup:A", 20), Self.row(take, -5), Self.row("reversed:\(take)", 5), Self.row("\(take):1", -5), Self.row("topup:B", 100),
            Self.row("spend:1:a:k:0", -10),
        ]
        #expect(PurchaseConsumption.attribution(ofTopUp: "A", entries: once).spends == [3: 5, 5: 10])
        #expect(PurchaseConsumption.topUp("A", meter: "ai", entries: once).meters["ai"] == .init(credited: 20, used: 15))
        #expect(PurchaseConsumption.attribution(ofTopUp: "B", entries: once).spends.isEmpty)
        // A claw-back of 10 across A's 5 and B's: given back, B's 5 first, then A's; taken again, A's 5 and B's 5.
        let across = [
            Self.row("topup:A", 5), Self.row("topup:B", 100), Self.row(take, -10), Self.row("reversed:\(take)", 10), Self.row("\(take):1", -10),
        ]
        #expect(PurchaseConsumption.attribution(ofTopUp: "A", entries: across).spends == [4: 5])
        #expect(PurchaseConsumption.attribution(ofTopUp: "B", entries: across).spends == [4: 5])
        // Given back and not taken again: nothing of either counts.
        let back = Array(across.prefix(4))
        #expect(PurchaseConsumption.attribution(ofTopUp: "A", entries: back).spends.isEmpty)
        #expect(PurchaseConsumption.attribution(ofTopUp: "B", entries: back).spends.isEmpty)
    }

    /// A claw-back's row is all it owed; the part the bucket did not have is its claim (`claim:<take>`, CreditClaims),
    /// which credits coming back pay later. Expectations by hand, from what the customer's work used of each pack.
    @Test(
        "a claw-back with a claim draws only what it took; a payment of its claim draws as the credits come back; its reversal gives back what it and the payments took, never the claimed part"
    )
    func clawBackWithAClaim() {
        let take = "clawback:s.1:1700000000000:b"
        // A's 100, 30 of them held; the claw-back owes 100: 70 there, 30 claimed on the held.
        let clawedBack = [Self.row("topup:A", 100), Self.row("hold:h:0", -30), Self.row(take, -100), Self.row("claim:\(take)", 30)]
        // The work charged the 30 held: it used 30 of A, the claw-back took the other 70.
        let settled = clawedBack + [Self.row("hold-charge:h:0:offset", 30), Self.row("hold-charge:h:0", -30)]
        #expect(PurchaseConsumption.attribution(ofTopUp: "A", entries: settled).spends == [2: 70, 5: 30])
        let settledReversed = settled + [Self.row("reversed:\(take)", 100), Self.row("reversed:claim:\(take)", -30)]
        #expect(PurchaseConsumption.attribution(ofTopUp: "A", entries: settledReversed).spends == [5: 30], "the refund reversed: the work's 30")
        // Released instead: the 30 came back and paid the claim — the claw-back took all of A; reversed, none.
        let released = clawedBack + [Self.row("hold-return:h:0", 30), Self.row("claim:\(take):paid:hold-return:h:0", -30)]
        #expect(PurchaseConsumption.attribution(ofTopUp: "A", entries: released).spends == [2: 70, 5: 30])
        let releasedReversed =
            released + [
                Self.row("reversed:\(take)", 100), Self.row("reversed:claim:\(take)", -30),
                Self.row("reversed:claim:\(take):paid:hold-return:h:0", 30),
                Self.row("topup:B", 100), Self.row("spend:1:a:k:0", -110),
            ]
        #expect(PurchaseConsumption.attribution(ofTopUp: "A", entries: releasedReversed).spends == [10: 100], "the later spend used all of A")
        #expect(PurchaseConsumption.attribution(ofTopUp: "B", entries: releasedReversed).spends == [10: 10])
        // No live window: A's 20 taken and 30 claimed, given back; B bought; 40 spent: A's 20, then B's 20.
        let short = [
            Self.row("topup:A", 20), Self.row(take, -50), Self.row("claim:\(take)", 30), Self.row("reversed:\(take)", 50),
            Self.row("reversed:claim:\(take)", -30),
            Self.row("topup:B", 100), Self.row("spend:1:a:k:0", -40),
        ]
        #expect(PurchaseConsumption.attribution(ofTopUp: "A", entries: short).spends == [6: 20])
        #expect(PurchaseConsumption.attribution(ofTopUp: "B", entries: short).spends == [6: 20])
        // A claw-back that took nothing (all 30 claimed, the bucket spent), reversed: nothing comes back; B's 40 are B's.
        // Paid by a spend given back before the reversal: the payment's 30 came back as A's.
        let none = [
            Self.row("topup:A", 30), Self.row("spend:1:a:k:0", -30), Self.row(take, -30), Self.row("claim:\(take)", 30),
            Self.row("reversed:\(take)", 30),
            Self.row("reversed:claim:\(take)", -30), Self.row("topup:B", 100), Self.row("spend:1:a:m:0", -40),
        ]
        #expect(PurchaseConsumption.attribution(ofTopUp: "B", entries: none).spends == [7: 40])
        #expect(PurchaseConsumption.attribution(ofTopUp: "A", entries: none).spends == [1: 30])
        let paid = [
            Self.row("topup:A", 30), Self.row("spend:1:a:k:0", -30), Self.row(take, -30), Self.row("claim:\(take)", 30),
            Self.row("spend:1:a:k:0:reversed", 30),
            Self.row("claim:\(take):paid:reversal:a:k:0", -30), Self.row("reversed:\(take)", 30), Self.row("reversed:claim:\(take)", -30),
            Self.row("reversed:claim:\(take):paid:reversal:a:k:0", 30), Self.row("topup:B", 100), Self.row("spend:1:a:m:0", -40),
        ]
        #expect(PurchaseConsumption.attribution(ofTopUp: "A", entries: paid).spends == [10: 30])
        #expect(PurchaseConsumption.attribution(ofTopUp: "B", entries: paid).spends == [10: 10])
        // An account id holding `:paid:` does not make a claim look like a payment.
        let odd = "clawback:s.1:1700000000000:topup:x:paid:y:ai"
        let oddRows = [
            Self.row("topup:A", 20), Self.row(odd, -50), Self.row("claim:\(odd)", 30), Self.row("reversed:\(odd)", 50),
            Self.row("reversed:claim:\(odd)", -30),
        ]
        #expect(PurchaseConsumption.attribution(ofTopUp: "A", entries: oddRows + [Self.row("spend:1", -5)]).spends == [5: 5])
    }

    /// The lots are the credits in the bucket (the property tests check their sum against the bucket's balance over
    /// generated histories): held credits are out of them until they come back, credits coming back through an
    /// upgrade's carry join its lot, and a refund that takes more than its purchase has left takes the others'.
    @Test(
        "held credits are out of the lots until they come back; a return through a carry joins its lot; a refund beyond its own lot takes the others', oldest first"
    )
    func lotsAreTheBucket() {
        // A refunded while 30 of it are held (20 spent: the refund finds 50, claims 50); B bought; a claw-back of 40
        // takes B's (A's are out); the 30 come back and pay A's claim; 60 spent: all B's. B: 40 + 60, all of it.
        let refund = "refund:A:b"
        let heldAtTheRefund = [
            Self.row("topup:A", 100), Self.row("hold:h:0", -30), Self.row("spend:1", -20), Self.row(refund, -100), Self.row("claim:\(refund)", 50),
            Self.row("topup:B", 100),
            Self.row("clawback:p:1700000000000:b", -40), Self.row("hold-return:h:0", 30), Self.row("claim:\(refund):paid:hold-return:h:0", -30),
            Self.row("spend:2", -60),
        ]
        #expect(PurchaseConsumption.attribution(ofTopUp: "B", entries: heldAtTheRefund).spends == [6: 40, 9: 60])
        #expect(PurchaseConsumption.leftInLots(heldAtTheRefund) == 0)
        // A carry of 98 and 7 back through it from a hold of the old window, both taken by the refund of the upgrade
        // (105); then A bought and 10 spent: A's.
        let carry = "carry:p2:cycle:s:p1:ai:in"
        let throughTheCarry = [
            Self.row(carry, 98), Self.row("hold-return:h:0", 7), Self.row("refund:p2:1700000000001:\(carry)", -105), Self.row("topup:A", 100),
            Self.row("spend:1", -10),
        ]
        #expect(PurchaseConsumption.attribution(ofTopUp: "A", entries: throughTheCarry).spends == [4: 10])
        #expect(PurchaseConsumption.leftInLots(throughTheCarry) == 90)
        // A used 30 (70 left) and 14 from support beside it; A refunded takes its 100 from the pool: the 70 and the 14,
        // claiming 16. B bought, 50 spent: all B's.
        let beyond = [
            Self.row("topup:A", 100), Self.row("spend:1", -30), Self.row("adjust:x", 14), Self.row(refund, -100), Self.row("claim:\(refund)", 16),
            Self.row("topup:B", 100),
            Self.row("spend:2", -50),
        ]
        #expect(PurchaseConsumption.attribution(ofTopUp: "B", entries: beyond).spends == [6: 50])
        #expect(PurchaseConsumption.leftInLots(beyond) == 50)
        // A refunded (70 left of it) takes 30 of B besides; reversed, they go back where they came from: 170 spent
        // after use all of B (review of 108025b: the reversal gave all 100 to A, and B answered 70 %).
        let reversedRefund = [
            Self.row("topup:A", 100), Self.row("spend:1", -30), Self.row("topup:B", 100), Self.row(refund, -100), Self.row("reversed:\(refund)", 100),
            Self.row("spend:2", -170),
        ]
        #expect(PurchaseConsumption.attribution(ofTopUp: "B", entries: reversedRefund).spends == [5: 100])
        #expect(PurchaseConsumption.attribution(ofTopUp: "A", entries: reversedRefund).spends == [1: 30, 5: 70])
        // The upgrade's refund takes the carry and then the 10 that came back through it (`…:back:<return>`): from
        // the carry's lot, not A's, so 100 spent after are all A's; the refund reversed, the 20 and the 10 are the
        // carry's again (review of 108025b: A answered 90 %).
        let take = "refund:p2:1700000000001:\(carry)"
        let back = [
            Self.row("topup:A", 100), Self.row(carry, 20), Self.row(take, -20), Self.row("hold-return:h:0", 10),
            Self.row("\(take):back:hold-return:h:0", -10),
            Self.row("spend:1", -100),
        ]
        #expect(PurchaseConsumption.attribution(ofTopUp: "A", entries: back).spends == [5: 100])
        let backReversed =
            Array(back.dropLast()) + [
                Self.row("reversed:\(take)", 20), Self.row("reversed:\(take):back:hold-return:h:0", 10), Self.row("spend:1", -100),
            ]
        #expect(PurchaseConsumption.attribution(ofTopUp: "A", entries: backReversed).spends == [7: 100])
        #expect(PurchaseConsumption.leftInLots(backReversed) == 30)
        // A refunded while all its 100 are held, after B was bought: the refund takes B's 100 from the pool; the hold
        // released, those 100 are B's again, so 100 spent after are B's — as had the hold ended before the refund; the
        // refund reversed, A's 100 are A's (review of 8e5a31c: B answered 0 %).
        let heldOut = [
            Self.row("topup:A", 100), Self.row("hold:h:0", -100), Self.row("topup:B", 100), Self.row(refund, -100), Self.row("hold-return:h:0", 100),
        ]
        let backFirst = [
            Self.row("topup:A", 100), Self.row("hold:h:0", -100), Self.row("topup:B", 100), Self.row("hold-return:h:0", 100), Self.row(refund, -100),
        ]
        for (order, rows) in [("refund first", heldOut), ("hold first", backFirst)] {
            #expect(PurchaseConsumption.attribution(ofTopUp: "B", entries: rows + [Self.row("spend:1", -100)]).spends == [5: 100], "\(order)")
            let reversed = rows + [Self.row("reversed:\(refund)", 100), Self.row("spend:1", -200)]
            #expect(PurchaseConsumption.attribution(ofTopUp: "A", entries: reversed).spends == [6: 100], "\(order): reversed")
            #expect(PurchaseConsumption.attribution(ofTopUp: "B", entries: reversed).spends == [6: 100], "\(order): reversed")
        }
        // A carry of 50 all spent, then reversed as stale (it takes 50 from the bucket: B's): the lots hold B's 50, and
        // 50 spent after use the rest of B (review of 8e5a31c: the lots kept 100).
        let stale = [
            Self.row(carry, 50), Self.row("topup:B", 100), Self.row("spend:1", -50), Self.row("reversed:\(carry)", -50), Self.row("spend:2", -50),
        ]
        #expect(PurchaseConsumption.leftInLots(stale) == 0)
        #expect(PurchaseConsumption.attribution(ofTopUp: "B", entries: stale).spends == [4: 50])
    }

    /// Expectations by hand, from what the customer's work used of each pack, in both orders of the refund and the end
    /// of what was out: a pack's answer may not depend on which came first.
    @Test(
        "a hold charged after its pack was refunded charges the pack it held, not the one the refund took; a chain of refunds that each took the next pack's credits is repaid along the chain"
    )
    func chargedAndChained() {
        let refund = "refund:A:b"
        // A's 100 held; B bought; the work charged 100 (nothing back: the offset and the charge) or 40 (60 back, in
        // the return row); A refunded before or after. The work used A's; the refund took B's; the 60 back, spent, are B's.
        for (charged, ending) in [
            (100, [Self.row("hold-charge:h:0:offset", 100), Self.row("hold-charge:h:0", -100)]),
            (40, [Self.row("hold-return:h:0", 100), Self.row("hold-charge:h:0", -40)]),
        ] {
            let bought = [Self.row("topup:A", 100), Self.row("hold:h:0", -100), Self.row("topup:B", 100)]
            for (order, rows) in [
                ("refund first", bought + [Self.row(refund, -100)] + ending), ("charge first", bought + ending + [Self.row(refund, -100)]),
            ] {
                let chargeAt = rows.firstIndex { $0.operationKey == "hold-charge:h:0" }!
                #expect(PurchaseConsumption.attribution(ofTopUp: "A", entries: rows).spends == [chargeAt: Int64(charged)], "\(charged), \(order)")
                #expect(PurchaseConsumption.attribution(ofTopUp: "B", entries: rows).spends.isEmpty, "\(charged), \(order)")
                #expect(PurchaseConsumption.leftInLots(rows) == Int64(100 - charged))
                guard charged < 100 else { continue }
                let spent = rows + [Self.row("spend:1", -60)]
                #expect(PurchaseConsumption.attribution(ofTopUp: "B", entries: spent).spends == [rows.count: 60], "\(order): spent after")
            }
        }
        // A's 100 held; B bought, A refunded (B's 100 taken); C bought, B refunded (C's taken); the hold released. The
        // 100 back are A's, repaying B's, repaying C's: 100 spent after are C's — as had the hold ended first.
        let chained = [
            Self.row("topup:A", 100), Self.row("hold:h:0", -100), Self.row("topup:B", 100), Self.row(refund, -100), Self.row("topup:C", 100),
            Self.row("refund:B:b", -100), Self.row("hold-return:h:0", 100), Self.row("spend:1", -100),
        ]
        let endedFirst = [
            Self.row("topup:A", 100), Self.row("hold:h:0", -100), Self.row("topup:B", 100), Self.row("topup:C", 100),
            Self.row("hold-return:h:0", 100), Self.row(refund, -100), Self.row("refund:B:b", -100), Self.row("spend:1", -100),
        ]
        for (order, rows) in [("refunds first", chained), ("hold first", endedFirst)] {
            #expect(PurchaseConsumption.attribution(ofTopUp: "C", entries: rows).spends == [7: 100], "\(order)")
            #expect(PurchaseConsumption.attribution(ofTopUp: "A", entries: rows).spends.isEmpty, "\(order)")
            #expect(PurchaseConsumption.attribution(ofTopUp: "B", entries: rows).spends.isEmpty, "\(order)")
            #expect(PurchaseConsumption.leftInLots(rows) == 0)
            // Both refunds reversed: A's and B's 100 are theirs again; 200 more spent are A's and B's.
            let reversed = rows + [Self.row("reversed:\(refund)", 100), Self.row("reversed:refund:B:b", 100), Self.row("spend:2", -200)]
            #expect(PurchaseConsumption.attribution(ofTopUp: "A", entries: reversed).spends == [10: 100], "\(order): reversed")
            #expect(PurchaseConsumption.attribution(ofTopUp: "B", entries: reversed).spends == [10: 100], "\(order): reversed")
            #expect(PurchaseConsumption.attribution(ofTopUp: "C", entries: reversed).spends == [7: 100], "\(order): reversed")
        }
    }

    @Test("a spend of 80 (70 of A, 10 of B) given back in part, 30: B's 10 go back first, then 20 of A's; the next spend draws on A's again")
    func reversedSpend() {
        let entries = [
            LedgerEntry(operationKey: "topup:A", bucket: "b", delta: 70, reason: "top-up"),
            LedgerEntry(operationKey: "topup:B", bucket: "b", delta: 100, reason: "top-up"),
            LedgerEntry(operationKey: "spend:1:a:k:0", bucket: "b", delta: -80, reason: "usage"),
            LedgerEntry(operationKey: "spend:1:a:k:0:reversed", bucket: "b", delta: 30, reason: "usage reversed"),
            LedgerEntry(operationKey: "spend:1:a:m:0", bucket: "b", delta: -20, reason: "usage"),
        ]
        let a = PurchaseConsumption.attribution(ofTopUp: "A", entries: entries)
        #expect(a.credited == 70 && a.spends == [2: 50, 4: 20])
        #expect(PurchaseConsumption.attribution(ofTopUp: "B", entries: entries).spends.isEmpty)
    }

    /// An upgrade's carry-over is a lot of the pool like a purchase (`carry:…:in`); the rows that take it back name it
    /// inside their keys (SubscriptionCredits: a refunded upgrade's take-back with its claim, a carry-over that no
    /// longer stands going back to its window). Before, none of them reached the lot: a refunded carry-over stayed in
    /// the pool, and later spends were counted against it rather than against the purchase after it.
    @Test(
        "a carry-over is a lot: its refund (with a claim) empties it, the refund's reversal puts it back, a carry-over moved back to its window leaves the pool, one made for credits out (pending) is an empty lot"
    )
    func carryOvers() {
        let carry = "carry:s.2:cycle:s:s.1:w0:ai:in"
        // 50 carried, 20 of them held; the upgrade refunded (all 50 owed, 20 claimed); Q bought; the hold released pays
        // the claim; 60 spent: all Q's.
        let refunded = [
            Self.row(carry, 50), Self.row("hold:h:0", -20), Self.row("refund:s.2:1700000000000:\(carry)", -50),
            Self.row("claim:refund:s.2:1700000000000:\(carry)", 20),
            Self.row("topup:Q", 100), Self.row("hold-return:h:0", 20), Self.row("claim:refund:s.2:1700000000000:\(carry):paid:hold-return:h:0", -20),
            Self.row("spend:1:a:t:0", -60),
        ]
        #expect(PurchaseConsumption.attribution(ofTopUp: "Q", entries: refunded).spends == [7: 60])
        // The refund reversed: the carry-over is back, first in, so the spend after draws on it before Q.
        let reversed =
            Array(refunded.dropLast()) + [
                Self.row("reversed:refund:s.2:1700000000000:\(carry)", 50), Self.row("reversed:claim:refund:s.2:1700000000000:\(carry)", -20),
                Self.row("reversed:claim:refund:s.2:1700000000000:\(carry):paid:hold-return:h:0", 20), Self.row("spend:1:a:t:0", -60),
            ]
        #expect(PurchaseConsumption.attribution(ofTopUp: "Q", entries: reversed).spends == [10: 10])
        // Moved back to its window (a copy of the upgrade put another period between): it leaves the pool.
        // (Counted as a spend, the move drew 50 of Q's first.)
        let moved = [Self.row("topup:Q", 100), Self.row(carry, 50), Self.row("reversed:\(carry)", -50), Self.row("spend:1:a:t:0", -60)]
        #expect(PurchaseConsumption.attribution(ofTopUp: "Q", entries: moved).spends == [3: 60])
        // Made for nothing, for credits out at the switch (`pending:`): an empty lot, and the pending row no spend
        // (counted as one, it drew 50 of Q's). A hold's return is bookkeeping, here as elsewhere.
        let pending = [
            Self.row("topup:Q", 100), Self.row(carry, 50), Self.row("pending:\(carry)", -50), Self.row("hold-return:h:0", 50),
            Self.row("spend:1:a:t:0", -60),
        ]
        #expect(PurchaseConsumption.attribution(ofTopUp: "Q", entries: pending).spends == [4: 60])
        // An account whose id holds `:carry:` and a carry-over's key: its purchase's refund still empties the purchase.
        let neighbour = [
            LedgerEntry(operationKey: "topup:T", bucket: "topup:\(carry):ai", delta: 100, reason: "r"), Self.row("topup:Q", 100),
            LedgerEntry(operationKey: "refund:T:topup:\(carry):ai", bucket: "topup:\(carry):ai", delta: -100, reason: "r"),
            Self.row("spend:1:a:t:0", -60),
        ]
        #expect(PurchaseConsumption.attribution(ofTopUp: "Q", entries: neighbour).spends == [3: 60])
    }

    /// A refund that found its credits out (CreditClaims): its row is all it owed, its claim gives back what was not
    /// there; what later paid the claim leaves the refunded purchase's lot, not another's.
    @Test(
        "a refund with a claim: a spend given back pays the claim from the refunded purchase, so a later purchase's use is its own; a held purchase charged after its refund is the refunded one's use"
    )
    func claims() {
        // P bought and all spent; P refunded (nothing there: all 100 claimed); Q bought; the spend given back pays the
        // claim; Q's 100 then spent.
        let given = [
            Self.row("topup:P", 100), Self.row("spend:1:a:s:0", -100), Self.row("refund:P:b", -100), Self.row("claim:refund:P:b", 100),
            Self.row("topup:Q", 100),
            Self.row("spend:1:a:s:0:reversed", 100), Self.row("claim:refund:P:b:paid:reversal:x:0", -100), Self.row("spend:1:a:t:0", -100),
        ]
        #expect(PurchaseConsumption.attribution(ofTopUp: "Q", entries: given).spends == [7: 100])
        // The spend of P's credits was given back: P's use is none (its credits went to the refund).
        #expect(PurchaseConsumption.attribution(ofTopUp: "P", entries: given).spends.isEmpty)
        // P bought and held whole; P refunded (all claimed); Q bought; the hold settled for all 100: P's credits were
        // used, Q's are untouched.
        let held = [
            Self.row("topup:P", 100), Self.row("hold:h:0", -100), Self.row("refund:P:b", -100), Self.row("claim:refund:P:b", 100),
            Self.row("topup:Q", 100),
            Self.row("hold-charge:h:0:offset", 100), Self.row("hold-charge:h:0", -100),
        ]
        #expect(PurchaseConsumption.attribution(ofTopUp: "P", entries: held).spends == [6: 100])
        #expect(PurchaseConsumption.attribution(ofTopUp: "Q", entries: held).spends.isEmpty)
        // Released instead, paying the claim; then the refund reversed: P's 100 are P's again, spent before Q's.
        let reversed = [
            Self.row("topup:P", 100), Self.row("hold:h:0", -100), Self.row("refund:P:b", -100), Self.row("claim:refund:P:b", 100),
            Self.row("topup:Q", 100),
            Self.row("hold-return:h:0", 100), Self.row("claim:refund:P:b:paid:hold-return:h:0", -100), Self.row("reversed:refund:P:b", 100),
            Self.row("reversed:claim:refund:P:b", -100), Self.row("reversed:claim:refund:P:b:paid:hold-return:h:0", 100),
            Self.row("spend:1:a:t:0", -150),
        ]
        #expect(PurchaseConsumption.attribution(ofTopUp: "P", entries: reversed).spends == [10: 100])
        #expect(PurchaseConsumption.attribution(ofTopUp: "Q", entries: reversed).spends == [10: 50])
    }
}
