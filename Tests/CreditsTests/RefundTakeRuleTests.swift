import Credits
import Subscriptions
import Testing

/// Credits that come back to a window a standing refund took from (docs/credits.md, "Held credits of a refunded
/// window"): they go back to the window and the refund takes them there, under its own key, so that its reversal gives
/// them back — unless the window is no longer the account's, or a carry took its credits elsewhere. Cases worked by hand.
@Suite("A refund takes what comes back to its window")
struct RefundTakeRuleTests {
    static let window = "cycle:s:p1:ai"
    static let refund = "refund:p1:1764806400000:cycle:s:p1:ai"
    static let account = AccountID("a")!

    static func since(
        kind: String = "cycle", open: Bool = false, carriedTo: String? = nil, refunded: Bool = true, refundedBy: String? = refund,
        owner: String? = "a", claims: [HoldSettlement.Claim]? = nil
    ) -> CreditHold.BucketSince {
        CreditHold.BucketSince(
            bucket: window, kind: kind, open: open, carriedTo: carriedTo, refunded: refunded, claims: claims, refundedBy: refundedBy, owner: owner)
    }

    @Test(
        "where a window's credits go back: to itself when a standing refund took from it and it is still the account's, open or not; nowhere when another account holds it or the read predates sql/0059; the carry first",
        arguments: [
            (since(), window),
            (since(open: true), window),
            (since(owner: "b"), nil),
            (since(owner: nil), nil),
            // Owners that are neighbours of the account "a" are other accounts: matched whole, never as a prefix or
            // without case.
            (since(owner: "A"), nil),
            (since(owner: "ab"), nil),
            (since(owner: "a:"), nil),
            (since(owner: ""), nil),
            (since(open: true, owner: "b"), nil),
            (since(refundedBy: nil), nil),
            (since(open: true, refundedBy: nil), nil),
            (since(carriedTo: "topup:a:carried"), "topup:a:carried"),
            (since(refunded: false, refundedBy: nil), nil),
            (since(open: true, refunded: false, refundedBy: nil), window),
        ] as [(CreditHold.BucketSince, String?)])
    func destination(since: CreditHold.BucketSince, expected: String?) {
        let open: Set<String> = since.open == true ? [Self.window] : []
        #expect(CreditHold.destinations([since], open: open, account: Self.account)[Self.window] == expected, "\(since)")
    }

    @Test("a top-up's refund takes back its own purchase, never what comes back: a refunded top-up takes its credits back while open")
    func topUp() {
        let topUp = CreditHold.BucketSince(
            bucket: "topup:a:ai", kind: "topup", open: true, refunded: true, refundedBy: "refund:sale:topup:a:ai", owner: "a")
        #expect(topUp.refund(takingFor: Self.account) == nil)
        #expect(CreditHold.destinations([topUp], open: ["topup:a:ai"], account: Self.account) == ["topup:a:ai": "topup:a:ai"])
        #expect(CreditHold.destinations([topUp], open: [], account: Self.account).isEmpty)
    }

    @Test(
        "a hold of 5 from the refunded window and 3 from a top-up, settled for 2 with a claim of 1 on the window: the claim is paid, the refund takes the window's other 2, the top-up gets its 3 back; the window's rows net as if the credits had come back before the refund"
    )
    func takes() throws {
        let debits = [HoldSettlement.Debit(bucket: Self.window, amount: 5), HoldSettlement.Debit(bucket: "topup:a:ai", amount: 3)]
        let since = [
            Self.since(claims: [.init(key: "claim:clawback:p0:1:cycle:s:p1:ai", outstanding: 1)]),
            CreditHold.BucketSince(bucket: "topup:a:ai", kind: "topup", open: true, owner: "a"),
        ]
        let destinations = CreditHold.destinations(since, open: ["topup:a:ai"], account: Self.account)
        let claims = CreditHold.claims(since)
        let outcome = try #require(HoldSettlement.settle(debits, charge: 2, destination: { destinations[$0] }, claims: { claims[$0] ?? [] }))
        let key = { (index: Int) in "hold-return:h:\(index)" }
        let takes = CreditHold.refundTakes(of: outcome, debits: debits, since: since, account: Self.account, key: key)
        #expect(takes == [LedgerEntry(operationKey: "\(Self.refund):back:hold-return:h:0", bucket: Self.window, delta: -2, reason: "refund")])
        // By hand, the window: −5 held; back 3 after the charge of 2 (with the charge's offset, 5), −2 charged, −1 to the
        // claim, −2 to the refund: −5 in all, as when the 3 came back first (the claim paid, the refund then taking the
        // rest with everything else left).
        let hold = CreditHold(
            id: .init(), account: Self.account, idempotencyKey: "k", meter: "ai", amount: 8, debits: debits, createdAt: .now, expiresAt: .now)
        let rows = CreditHold.debitEntries(of: hold) + CreditHold.endEntries(of: hold, outcome: outcome) + takes
        #expect(rows.filter { $0.bucket == Self.window }.reduce(0) { $0 + $1.delta } == -5)
        #expect(rows.filter { $0.bucket == "topup:a:ai" }.reduce(0) { $0 + $1.delta } == 0)
        // The same hold of another account's window now: nothing goes back to it, nothing is taken.
        let moved = [Self.since(owner: "b")] + since.dropFirst()
        let elsewhere = CreditHold.destinations(moved, open: ["topup:a:ai"], account: Self.account)
        let lapsing = try #require(HoldSettlement.settle(debits, charge: 2, destination: { elsewhere[$0] }))
        #expect(CreditHold.refundTakes(of: lapsing, debits: debits, since: moved, account: Self.account, key: key).isEmpty)
        #expect(lapsing.lapsed == 3 && lapsing.returned == 3)
    }

    @Test(
        "a hold of 6 from a window whose carry a standing refund of the upgrade took, and 2 from that top-up, settled for 1 with a claim of 1 on the top-up: 5 go to the top-up through the carry, pay the claim, and the refund takes the other 4 there; the top-up's own 2 stay; once the refund is reversed nothing is taken"
    )
    func carryTaken() throws {
        let topUp = "topup:a:carried"
        let take = "refund:p2:1764806400000:carry:p2:cycle:s:p1:ai:in"
        let debits = [HoldSettlement.Debit(bucket: Self.window, amount: 6), HoldSettlement.Debit(bucket: topUp, amount: 2)]
        let claim = HoldSettlement.Claim(key: "claim:\(take)", outstanding: 1)
        func since(takenBy: String?) -> [CreditHold.BucketSince] {
            [
                CreditHold.BucketSince(
                    bucket: Self.window, kind: "cycle", open: false, carriedTo: topUp, refunded: false, claims: [claim], owner: "a",
                    carryTakenBy: takenBy),
                CreditHold.BucketSince(bucket: topUp, kind: "topup", open: true, owner: "a"),
            ]
        }
        let taken = since(takenBy: take)
        let destinations = CreditHold.destinations(taken, open: [topUp], account: Self.account)
        #expect(destinations == [Self.window: topUp, topUp: topUp])
        let claims = CreditHold.claims(taken)
        let outcome = try #require(HoldSettlement.settle(debits, charge: 1, destination: { destinations[$0] }, claims: { claims[$0] ?? [] }))
        let key = { (index: Int) in "hold-return:h:\(index)" }
        let takes = CreditHold.refundTakes(of: outcome, debits: debits, since: taken, account: Self.account, key: key)
        // By hand: the charge of 1 from the window's debit (the front of the hold); its other 5 through the carry pay the
        // claim's 1 and the refund takes 4; the top-up's own 2 come back to it untaken.
        #expect(takes == [LedgerEntry(operationKey: "\(take):back:hold-return:h:0", bucket: topUp, delta: -4, reason: "refund")])
        let hold = CreditHold(
            id: .init(), account: Self.account, idempotencyKey: "k", meter: "ai", amount: 8, debits: debits, createdAt: .now, expiresAt: .now)
        let rows = CreditHold.endEntries(of: hold, outcome: outcome) + takes
        // The top-up: its 2 back, the window's 5 in, 1 to the claim, 4 to the refund: +2, as if the 5 had come back
        // before the refund, which would have taken them with the carry and claimed nothing.
        #expect(rows.filter { $0.bucket == topUp }.reduce(0) { $0 + $1.delta } == 2)
        let standing = since(takenBy: nil)
        let kept = CreditHold.refundTakes(of: outcome, debits: debits, since: standing, account: Self.account, key: key)
        #expect(kept.isEmpty, "a reversed refund takes nothing")
        // A read before sql/0064 named no taken carry: nothing goes to the top-up through it, nothing is taken.
        let old = [CreditHold.BucketSince(bucket: Self.window, kind: "cycle", open: false, refunded: false, owner: "a")]
        #expect(CreditHold.destinations(old, open: [topUp], account: Self.account).isEmpty)
    }

    @Test(
        "a take is under its refund's key whatever refund row the read found: the refund's own, a take of a hold's return or of a spend given back, or such takes nested (as written before the rule); a meter named back is not a take",
        arguments: [
            (refund, refund),
            ("\(refund):back:hold-return:5f0c1e2a-0000-4000-8000-000000000001:0", refund),
            ("\(refund):back:reversal:0123456789abcdef0123456789abcdef:1", refund),
            ("\(refund):back:hold-return:5f0c1e2a-0000-4000-8000-000000000001:0:back:hold-return:5f0c1e2a-0000-4000-8000-000000000002:0", refund),
            ("refund:p1:1:cycle:s:p1:back", "refund:p1:1:cycle:s:p1:back"),
            ("refund:p1:1:cycle:s:p1:back:back:hold-return:h:0", "refund:p1:1:cycle:s:p1:back"),
            ("\(refund):2", "\(refund):2"),
        ] as [(String, String)])
    func takeKey(found: String, refund: String) {
        let since = Self.since(refundedBy: found)
        #expect(since.refund(takingFor: Self.account) == refund)
        let debits = [HoldSettlement.Debit(bucket: Self.window, amount: 4)]
        let outcome = HoldSettlement.Outcome(charged: [], returns: [.init(bucket: Self.window, from: Self.window, amount: 4)], lapsed: 0)
        let takes = CreditHold.refundTakes(of: outcome, debits: debits, since: [since], account: Self.account) { "hold-return:h2:\($0)" }
        #expect(takes.map(\.operationKey) == ["\(refund):back:hold-return:h2:0"])
    }
}
