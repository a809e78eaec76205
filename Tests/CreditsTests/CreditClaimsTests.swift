import Credits
import Foundation
import Subscriptions
import Testing

/// A top-up refunded while credits of its bucket are out (held, or spent and given back later), exhaustively over
/// small amounts, with the rules alone: ``TopUpCredits`` takes what is there and claims the rest (``CreditClaims``),
/// ``HoldSettlement`` pays claims made after the debit from what comes back. The claims a hold's end is given are read
/// from the ledger as sql/0038 reads them (after the debit, unpaid, not reversed); the SQL itself is tested on
/// PostgreSQL (HoldDestinationTests, CreditClaimTests).
@Suite("Claims: a refund's end does not depend on whether held credits came back before it")
struct CreditClaimsTests {
    static let account = AccountID("claims-account")!
    static let bucket = CreditBucket.topUp(account: account, meter: "ai")
    static func catalogue(credits: Int64) -> TierCatalogue {
        TierCatalogue(
            meters: [.init(id: "ai", displayName: "AI")], free: .init(displayName: "Free", allowances: [:]), tiers: [],
            topUps: [.init(id: "pack", meter: "ai", credits: credits)])
    }

    @Test("refund before or after the credits come back: the same balance; its reversal gives back all it took; a claim is never paid beyond it")
    func eitherOrder() {
        var cases = 0
        for granted in Int64(1)...6 {
            for extra in Int64(0)...4 {
                for out in Int64(1)...(granted + extra) {
                    for charge in Int64(0)...out {
                        cases += 1
                        let label = "pack \(granted), extra \(extra), out \(out), charged \(charge)"
                        let catalogue = Self.catalogue(credits: granted)
                        var sale = TopUpCredits.Sale(id: "s1", productId: "pack", quantity: 1, revoked: false)
                        var before = Self.bought(sale, extra: extra, out: out, catalogue: catalogue)
                        var after = before
                        sale.revoked = true
                        // The credits come back, then the refund.
                        Self.end(out: out, charge: charge, in: &before)
                        Self.apply(TopUpCredits.operationsDue(sale, account: Self.account, catalogue: catalogue, ledger: before), to: &before)
                        // The refund while they are out, then they come back.
                        Self.apply(TopUpCredits.operationsDue(sale, account: Self.account, catalogue: catalogue, ledger: after), to: &after)
                        #expect(after.balance(of: Self.bucket.key) >= 0, "\(label): the refund left less than nothing")
                        Self.end(out: out, charge: charge, in: &after)
                        #expect(after.balance(of: Self.bucket.key) == before.balance(of: Self.bucket.key), "\(label)")
                        // What the refund took in all (its row, its claim, the claim's payments) is at most what it owed.
                        #expect(
                            CreditClaims.rows(of: "refund:s1:\(Self.bucket.key)", in: after).reduce(Int64(0)) { $0 - $1.delta } <= granted, "\(label)"
                        )
                        #expect(after.balance(of: Self.bucket.key) == max(granted + extra - charge - granted, 0), "\(label): by hand")
                        // Reversed, in either history: all that was bought, less what the work cost.
                        sale.revoked = false
                        for var ledger in [before, after] {
                            Self.apply(TopUpCredits.operationsDue(sale, account: Self.account, catalogue: catalogue, ledger: ledger), to: &ledger)
                            #expect(ledger.balance(of: Self.bucket.key) == granted + extra - charge, "\(label): after the refund's reversal")
                            #expect(Self.claims(after: "hold:h:0", in: ledger).isEmpty, "\(label): a reversed refund's claim is closed")
                        }
                    }
                }
            }
        }
        #expect(cases > 200)
    }

    @Test("a refund short of what it owes takes all it owes and claims the rest; one not short posts no claim")
    func takeBackRows() {
        #expect(
            CreditClaims.takeBack("refund:s", bucket: "b", owed: 10, available: 4, reason: "r") == [
                .post(LedgerEntry(operationKey: "refund:s", bucket: "b", delta: -10, reason: "r"), opening: nil),
                .post(
                    LedgerEntry(operationKey: "claim:refund:s", bucket: "b", delta: 6, reason: "claim: what the refund could not take"), opening: nil),
            ])
        #expect(CreditClaims.takeBack("refund:s", bucket: "b", owed: 10, available: 12, reason: "r").count == 1)
        #expect(CreditClaims.takeBack("refund:s", bucket: "b", owed: 10, available: -3, reason: "r").count == 2)
        #expect(CreditClaims.takeBack("refund:s", bucket: "b", owed: 0, available: 5, reason: "r").isEmpty)
    }

    @Test(
        "claims are paid oldest first, from credits going back to the bucket they were made on (a carry-over's top-up too), never past what is outstanding"
    )
    func payments() {
        let debits = [HoldSettlement.Debit(bucket: "window", amount: 4), HoldSettlement.Debit(bucket: "top", amount: 10)]
        // By debit: the claims on where its credits go back. The window's go to the top-up an upgrade carried it to,
        // whose refund claimed 2; the top-ups' own bucket has two claims.
        let claims = [
            "top": [HoldSettlement.Claim(key: "c1", outstanding: 3), HoldSettlement.Claim(key: "c2", outstanding: 5)],
            "window": [HoldSettlement.Claim(key: "k", outstanding: 2)],
        ]
        let outcome = HoldSettlement.settle(debits, charge: 6, destination: { $0 == "window" ? "carried" : $0 }, claims: { claims[$0] ?? [] })!
        // 6 charged: the window's 4, then 2 of the top-ups; 8 come back to the top-ups and pay 3 then 5.
        #expect(outcome.charged == [.init(bucket: "window", amount: 4), .init(bucket: "top", amount: 2)])
        #expect(
            outcome.payments == [
                .init(claim: "c1", bucket: "top", from: "top", amount: 3), .init(claim: "c2", bucket: "top", from: "top", amount: 5),
            ])
        #expect(outcome.returns.isEmpty && outcome.lapsed == 8 && outcome.gross(from: "top") == 8)
        let released = HoldSettlement.settle(debits, charge: 0, destination: { $0 == "window" ? "carried" : $0 }, claims: { claims[$0] ?? [] })!
        // The window's 4 go to the carry-over's top-up and pay its claim of 2 there.
        #expect(released.payments.first == .init(claim: "k", bucket: "carried", from: "window", amount: 2))
        #expect(released.returns == [.init(bucket: "carried", from: "window", amount: 2), .init(bucket: "top", from: "top", amount: 2)])
        #expect(released.lapsed == 10 && released.returned == 4)
        // A window closed meanwhile: its credits lapse, and pay nothing.
        let closed = HoldSettlement.settle(debits, charge: 0, destination: { $0 == "window" ? nil : $0 }, claims: { claims[$0] ?? [] })!
        #expect(closed.payments.allSatisfy { $0.from == "top" } && closed.lapsed == 4 + 8)
    }

    /// The sale bought, `extra` credits given by support, and `out` of the bucket taken by a hold.
    static func bought(_ sale: TopUpCredits.Sale, extra: Int64, out: Int64, catalogue: TierCatalogue) -> LedgerSnapshot {
        var ledger = LedgerSnapshot()
        apply(TopUpCredits.operationsDue(sale, account: account, catalogue: catalogue, ledger: ledger), to: &ledger)
        if extra > 0 { ledger.apply(.post(LedgerEntry(operationKey: "adjust:x", bucket: bucket.key, delta: extra, reason: "support"), opening: nil)) }
        ledger.apply(.post(LedgerEntry(operationKey: "hold:h:0", bucket: bucket.key, delta: -out, reason: "hold"), opening: nil))
        return ledger
    }

    /// The hold ends charging `charge`, its rest back to the bucket paying the claims made since, as its group writes it.
    static func end(out: Int64, charge: Int64, in ledger: inout LedgerSnapshot) {
        let claims = claims(after: "hold:h:0", in: ledger)
        let outcome = HoldSettlement.settle([.init(bucket: bucket.key, amount: out)], charge: charge, destination: { $0 }, claims: { _ in claims })!
        let gross = outcome.gross(from: bucket.key)
        if gross > 0 {
            ledger.apply(.post(LedgerEntry(operationKey: "hold-return:h:0", bucket: bucket.key, delta: gross, reason: "hold returned"), opening: nil))
        }
        for payment in outcome.payments {
            ledger.apply(
                .post(
                    LedgerEntry(
                        operationKey: CreditClaims.paymentKey(claim: payment.claim, payer: "hold-return:h:0"), bucket: payment.from,
                        delta: -payment.amount,
                        reason: "paid"), opening: nil))
        }
    }

    /// The unpaid claims on the bucket made after the row `since`, oldest first, as sql/0038 reads them.
    static func claims(after since: String, in ledger: LedgerSnapshot) -> [HoldSettlement.Claim] {
        guard let start = ledger.entries.firstIndex(where: { $0.operationKey == since }) else { return [] }
        return ledger.entries[(start + 1)...].compactMap { row in
            guard CreditClaims.isClaim(row.operationKey), row.delta > 0, !ledger.isPosted("reversed:" + row.operationKey.dropFirst("claim:".count))
            else { return nil }
            let paid = ledger.entries.filter { $0.operationKey.hasPrefix(row.operationKey + ":paid:") }.reduce(Int64(0)) { $0 + $1.delta }
            return row.delta + paid > 0 ? HoldSettlement.Claim(key: row.operationKey, outstanding: row.delta + paid) : nil
        }
    }

    static func apply(_ operations: [LedgerOperation], to ledger: inout LedgerSnapshot) {
        for operation in operations { ledger.apply(operation) }
    }
}
