import Credits
import Foundation
import Subscriptions
import Testing

/// The ledger rows a hold's end writes (`CreditHold.endEntries`), as docs/credits.md lays them out: what goes back
/// is `hold-return:<id>:<n>`, the charge is `usage` (`hold-charge:<id>:<n>`) after an offset that is part of the return
/// row where the rest goes back to the debit's own bucket, and a row of its own otherwise. Expected rows are written out
/// from that text, not computed the code's way.
@Suite("Hold ends: the ledger rows of a settle, a release, a carry and a lapse")
struct HoldEndRowsTests {
    let id = UUID(uuidString: "00000000-0000-4000-8000-000000000001")!
    let cycle = "cycle:s:p1:ai"
    let topUp = "topup:a:ai"

    func rows(_ debits: [HoldSettlement.Debit], charge: Int64, destination: @escaping (String) -> String?) throws -> [String] {
        let hold = CreditHold(
            id: id, account: try #require(AccountID("a")), idempotencyKey: "k", meter: "ai_requests", amount: debits.reduce(0) { $0 + $1.amount },
            debits: debits, createdAt: Date(), expiresAt: Date())
        let outcome = try #require(HoldSettlement.settle(debits, charge: charge, destination: destination))
        return CreditHold.endEntries(of: hold, outcome: outcome).map { "\($0.operationKey) \($0.bucket) \($0.delta) \($0.reason)" }
    }

    var prefix: String { id.uuidString.lowercased() }

    @Test("a settle of part of a one-bucket hold: the debit back whole, then the charge as usage — two rows")
    func partSettle() throws {
        let rows = try rows([.init(bucket: cycle, amount: 8)], charge: 5) { $0 }
        #expect(rows == ["hold-return:\(prefix):0 \(cycle) 8 hold returned", "hold-charge:\(prefix):0 \(cycle) -5 usage"])
    }

    @Test("a settle across two buckets: the first wholly charged keeps its offset row; the second gives back its rest with its charge's offset")
    func twoBuckets() throws {
        let rows = try rows([.init(bucket: cycle, amount: 5), .init(bucket: topUp, amount: 3)], charge: 6) { $0 }
        #expect(
            Set(rows) == [
                "hold-charge:\(prefix):0:offset \(cycle) 5 hold charged", "hold-charge:\(prefix):0 \(cycle) -5 usage",
                "hold-return:\(prefix):1 \(topUp) 3 hold returned", "hold-charge:\(prefix):1 \(topUp) -1 usage",
            ])
        #expect(rows.count == 4)
    }

    @Test("a release gives back only what was held; a settle of everything writes no return")
    func releaseAndWhole() throws {
        #expect(try rows([.init(bucket: cycle, amount: 8)], charge: 0) { $0 } == ["hold-return:\(prefix):0 \(cycle) 8 hold returned"])
        #expect(
            try rows([.init(bucket: cycle, amount: 8)], charge: 8) { $0 } == [
                "hold-charge:\(prefix):0:offset \(cycle) 8 hold charged", "hold-charge:\(prefix):0 \(cycle) -8 usage",
            ])
    }

    @Test("the rest carried to a top-up or lapsed: the charge's offset stays in the debit's bucket, a row of its own")
    func carriedAndLapsed() throws {
        #expect(
            try rows([.init(bucket: cycle, amount: 5)], charge: 2) { _ in topUp } == [
                "hold-return:\(prefix):0 \(topUp) 3 hold returned", "hold-charge:\(prefix):0:offset \(cycle) 2 hold charged",
                "hold-charge:\(prefix):0 \(cycle) -2 usage",
            ])
        #expect(
            try rows([.init(bucket: cycle, amount: 5)], charge: 2) { _ in nil } == [
                "hold-charge:\(prefix):0:offset \(cycle) 2 hold charged", "hold-charge:\(prefix):0 \(cycle) -2 usage",
            ])
    }
}
