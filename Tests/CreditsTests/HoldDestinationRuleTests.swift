import Credits
import Subscriptions
import Testing

/// A hold nothing happened to since it was taken (taken and ended in one group of requests) goes back as the general
/// rule says it would (docs/credits.md, "Where credits go back"): the shortcut the hold group takes is that rule.
@Suite("Where an untouched hold's credits go back")
struct HoldDestinationRuleTests {
    @Test("for any debits and any open buckets, the untouched hold's destinations are the general rule's")
    func untouchedIsTheRule() {
        var random = SystemRandomNumberGenerator()
        let buckets = ["cycle:s:p1:ai", "daily:a:ai:2026-11-29", "topup:a:ai", "entitlement:g1:ai", "cycle:s:p2:ai"]
        for _ in 0..<2_000 {
            let debits = buckets.filter { _ in Bool.random(using: &random) }.map {
                HoldSettlement.Debit(bucket: $0, amount: Int64.random(in: 1...50, using: &random))
            }
            let open = Set(buckets.filter { _ in Bool.random(using: &random) })
            let untouched = debits.map {
                CreditHold.BucketSince(bucket: $0.bucket, kind: String($0.bucket.prefix { $0 != ":" }), open: open.contains($0.bucket))
            }
            let account = AccountID("a")!
            #expect(CreditHold.destinations(ofUntouched: debits, open: open) == CreditHold.destinations(untouched, open: open, account: account))
        }
    }
}
