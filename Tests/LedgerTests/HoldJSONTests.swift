import Credits
import Foundation
import PayloadDecoding
import Testing

@testable import HTTPAPI
@testable import Persistence
@testable import Subscriptions

/// A hold's answer, a hold's stored debits and a spend's stored answer are written by hand; these hold them to what
/// `JSONEncoder` writes (the answer, byte for byte, with the API's encoder) or to what `JSONDecoder` reads back (the
/// stored values), over random values with awkward strings and dates (``StatusJSONTests``' generator).
@Suite struct HoldJSONTests {
    typealias Values = StatusJSONTests

    static func hold(_ random: inout Values.Generator) -> CreditHold {
        let created = Values.date(&random) ?? Date(timeIntervalSince1970: 0)
        let ended = Bool.random(using: &random)
        return CreditHold(
            id: UUID(), account: AccountID(Values.text(&random, maximum: 40).replacingOccurrences(of: "\n", with: "n")) ?? AccountID("fallback")!,
            idempotencyKey: Values.text(&random), meter: Values.text(&random), amount: Int64.random(in: 1...1_000_000_000, using: &random),
            debits: [], createdAt: created, expiresAt: Values.date(&random) ?? created,
            state: ended ? [.settled, .released, .expired].randomElement(using: &random)! : .held,
            charged: ended ? Values.integer(&random) : nil, returned: ended ? Values.integer(&random) : nil,
            lapsed: ended ? Values.integer(&random) : nil, endedAt: ended ? Values.date(&random) : nil)
    }

    @Test func aHoldsAnswerIsWhatJSONEncoderWrites() throws {
        var random = Values.Generator(state: 53)
        for _ in 0..<2_000 {
            let hold = HoldsController.HoldJSON(Self.hold(&random), remaining: Values.integer(&random))
            let expected = String(decoding: try StorekeeperRequestContext.jsonEncoder.encode(hold), as: UTF8.self)
            #expect(String(decoding: hold.json, as: UTF8.self) == expected)
        }
    }

    @Test func storedDebitsReadBackAsWritten() throws {
        var random = Values.Generator(state: 36)
        for _ in 0..<1_000 {
            let debits = (0..<Int.random(in: 0...4, using: &random)).map { _ in
                HoldSettlement.Debit(bucket: Values.text(&random), amount: Int64.random(in: 0...Int64.max, using: &random))
            }
            let written = Array(CreditHoldStore.StoredDebit.json(debits).utf8)
            // Read by Foundation's decoder (any reader) and by the one the store reads the column with.
            for read in [
                try JSONDecoder().decode([CreditHoldStore.StoredDebit].self, from: Data(written)),
                try PayloadDecoder().decode([CreditHoldStore.StoredDebit].self, from: written),
            ] {
                #expect(read.map(\.bucket) == debits.map(\.bucket))
                #expect(read.map(\.amount) == debits.map(\.amount))
            }
        }
    }

    /// The store reads a hold's `since` as PostgreSQL prints jsonb (`", "` and `": "` between members, keys by length
    /// then bytes, nulls for what a bucket lacks, control characters as `\u00XX`): written here as it prints it.
    @Test func aHoldsSinceReadsAsPostgreSQLPrintsIt() throws {
        let text = #"""
            [{"kind": null, "open": false, "bucket": "gone\u0001", "claims": [], "refunded": false, "carriedTo": null}, \
            {"kind": "cycle", "open": true, "bucket": "cycle:é\"/", "claims": [{"key": "claim:1", "outstanding": 9223372036854775807}], \
            "refunded": true, "carriedTo": "topup:t"}]
            """#.replacingOccurrences(of: "\\\n", with: "")
        let since = try PayloadDecoder().decode([CreditHold.BucketSince].self, from: Array(text.utf8))
        #expect(
            since == [
                .init(bucket: "gone\u{01}", kind: nil, open: false, carriedTo: nil, refunded: false, claims: []),
                .init(
                    bucket: "cycle:é\"/", kind: "cycle", open: true, carriedTo: "topup:t", refunded: true,
                    claims: [.init(key: "claim:1", outstanding: .max)]),
            ])
    }

    @Test func aStoredSpendAnswerReadsBackAsWritten() throws {
        var random = Values.Generator(state: 15)
        for _ in 0..<1_000 {
            let answer = UsageRequests.Answer(
                outcome: [.spent, .insufficientCredits, .idempotencyKeyReused].randomElement(using: &random)!, meter: Values.text(&random),
                remaining: Values.integer(&random), error: Values.optionalText(&random), message: Values.optionalText(&random))
            #expect(try JSONDecoder().decode(UsageRequests.Answer.self, from: Data(answer.json.utf8)) == answer)
        }
    }
}
