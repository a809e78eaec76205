import Credits
import Testing

/// ``HoldSettlement`` exhaustively over small holds: every split of a hold over up to three buckets, every charge, every
/// bucket open, carried or closed.
@Suite("Hold settlement: what is charged, what goes back, what lapses")
struct HoldSettlementTests {
    enum Fate: CaseIterable { case open, carried, closed }

    @Test(
        "charged + returned + lapsed is the hold; the charge comes from the front of the spend order; each rest goes where its bucket's credits are")
    func exhaustive() {
        var cases = 0
        for split in Self.splits(of: [1, 2, 3], maximum: 4) {
            let debits = split.enumerated().map { HoldSettlement.Debit(bucket: "b\($0.offset)", amount: $0.element) }
            let held = split.reduce(0, +)
            for fates in Self.fates(count: debits.count) {
                let destination = { (bucket: String) -> String? in
                    switch fates[Int(bucket.dropFirst())!] {
                    case .open: return bucket
                    case .carried: return "top-up"
                    case .closed: return nil
                    }
                }
                for charge in 0...held {
                    cases += 1
                    let outcome = HoldSettlement.settle(debits, charge: charge, destination: destination)!
                    let charged = outcome.charged.reduce(0) { $0 + $1.amount }
                    #expect(charged == charge)
                    #expect(charged + outcome.returned + outcome.lapsed == held)
                    // The front of the spend order pays: a later bucket keeps a charge only when every earlier one is spent whole.
                    for (index, part) in outcome.charged.enumerated() where index < outcome.charged.count - 1 {
                        #expect(part.amount == debits[index].amount)
                    }
                    for back in outcome.returns {
                        #expect(back.amount > 0 && back.bucket == destination(back.from))
                    }
                    let closedRest = zip(debits, Self.rests(debits, charge: charge)).filter { fates[Int($0.0.bucket.dropFirst())!] == .closed }
                    #expect(outcome.lapsed == closedRest.reduce(0) { $0 + $1.1 })
                }
            }
        }
        #expect(cases > 1_000)
    }

    @Test("a charge above the hold, below zero, or a debit of nothing has no outcome")
    func refused() {
        let debits = [HoldSettlement.Debit(bucket: "a", amount: 3)]
        #expect(HoldSettlement.settle(debits, charge: 4, destination: { $0 }) == nil)
        #expect(HoldSettlement.settle(debits, charge: -1, destination: { $0 }) == nil)
        #expect(HoldSettlement.settle([.init(bucket: "a", amount: 0)], charge: 0, destination: { $0 }) == nil)
        #expect(HoldSettlement.settle([], charge: 0, destination: { $0 }) == HoldSettlement.Outcome(charged: [], returns: [], lapsed: 0))
    }

    /// What each debit keeps back after `charge` is taken from the front.
    static func rests(_ debits: [HoldSettlement.Debit], charge: Int64) -> [Int64] {
        var left = charge
        return debits.map { debit in
            let kept = min(debit.amount, left)
            left -= kept
            return debit.amount - kept
        }
    }

    static func splits(of counts: [Int], maximum: Int64) -> [[Int64]] {
        counts.flatMap { count -> [[Int64]] in
            var result: [[Int64]] = [[]]
            for _ in 0..<count { result = result.flatMap { prefix in (1...maximum).map { prefix + [$0] } } }
            return result
        }
    }

    static func fates(count: Int) -> [[Fate]] {
        var result: [[Fate]] = [[]]
        for _ in 0..<count { result = result.flatMap { prefix in Fate.allCases.map { prefix + [$0] } } }
        return result
    }
}
