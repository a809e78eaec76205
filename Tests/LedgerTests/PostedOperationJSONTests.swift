import Credits
import Foundation
import Subscriptions
import Testing

@testable import Persistence

/// The credit operations an apply posts are written as JSON by hand for `post_credit_operations`; this holds them, byte
/// for byte, to what `JSONEncoder` with snake-case keys (the encoding they replaced) writes with its keys sorted, over
/// random operations with awkward strings, dates and integers (``StatusJSONTests``' generator). The database's reading
/// of them is what every apply in the ledger's tests checks.
@Suite struct PostedOperationJSONTests {
    typealias Values = StatusJSONTests

    static func operation(_ random: inout Values.Generator) -> LedgerOperation {
        if Int.random(in: 0..<4, using: &random) == 0 {
            return .setWindowEnd(bucket: Values.text(&random), end: Values.date(&random))
        }
        let delta = [Int64.min, Int64.max, 0, -1].randomElement(using: &random)!
        let entry = LedgerEntry(
            operationKey: Values.text(&random), bucket: Values.text(&random),
            delta: Bool.random(using: &random) ? delta : Values.integer(&random) ?? 0, reason: Values.text(&random))
        guard Bool.random(using: &random) else { return .post(entry, opening: nil) }
        let opening = CreditBucket(
            key: Values.text(&random), meter: Values.text(&random),
            kind: CreditBucket.Kind(["cycle", "topup", "daily", Values.text(&random)].randomElement(using: &random)!),
            originalTransactionId: Values.optionalText(&random), billingPeriod: Values.optionalText(&random),
            accountId: Bool.random(using: &random) ? AccountID("account-\(Values.integer(&random) ?? 0)") : nil,
            validFrom: Values.date(&random) ?? Date(timeIntervalSince1970: 0), validUntil: Values.date(&random), price: Values.integer(&random))
        return .post(entry, opening: opening)
    }

    @Test func operationsAreWhatJSONEncoderWrote() throws {
        let encoder = JSONEncoder()
        encoder.keyEncodingStrategy = .convertToSnakeCase
        encoder.outputFormatting = .sortedKeys
        var random = Values.Generator(state: 21)
        for _ in 0..<2_000 {
            let operations = (0..<Int.random(in: 0...4, using: &random)).map { _ in Self.operation(&random) }
            let expected = try encoder.encode(operations.map(CreditLedger.PostedOperation.init))
            #expect(CreditLedger.PostedOperation.json(of: operations) == String(decoding: expected, as: UTF8.self))
        }
    }
}
