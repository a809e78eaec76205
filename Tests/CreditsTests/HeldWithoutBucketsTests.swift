import Credits
import Foundation
import Testing

/// An unlimited meter's hold takes from no bucket (docs/credits.md, "Status": `held` is what holds keep out of
/// `remaining`). Such a hold is shown as held while its meter is unlimited; once the meter is counted again (the grant
/// ended, the subscription refunded) it keeps nothing out of what is left, so it must count nothing — else held +
/// spent + remaining comes to more than the account was ever given (helper-153).
@Suite("Held credits of holds taken while a meter was unlimited")
struct HeldWithoutBucketsTests {
    static let catalogue = TierCatalogue(
        meters: [.init(id: "exports", displayName: "Exports")],
        free: .init(displayName: "Free", allowances: ["exports": Allowance(perCycle: 3)]),
        tiers: [], topUps: [])

    static func held(_ allowance: Allowance, inBuckets: Int64?, withoutBuckets: Int64?) -> Int64? {
        AccountCredits.evaluate(
            subscriptions: [], catalogue: catalogue, live: [], now: Date(timeIntervalSince1970: 1_790_000_000),
            tier: (id: "any", allowances: ["exports": allowance]), held: inBuckets.map { ["exports": $0] } ?? [:],
            heldWithoutBuckets: withoutBuckets.map { ["exports": $0] } ?? [:]
        ).meters["exports"]?.held
    }

    @Test("while the meter is unlimited both kinds count; once it is counted only what holds took from its buckets")
    func countedOnlyWhileUnlimited() {
        #expect(Self.held(Allowance(unlimited: true), inBuckets: 4, withoutBuckets: 40) == 44)
        #expect(Self.held(Allowance(unlimited: true), inBuckets: nil, withoutBuckets: 40) == 40)
        #expect(Self.held(Allowance(perCycle: 3), inBuckets: 4, withoutBuckets: 40) == 4)
        #expect(Self.held(Allowance(perCycle: 3), inBuckets: nil, withoutBuckets: 40) == 0)
    }

    @Test("the two sums, each at most Int64.max as the database caps them, add up to Int64.max, not a trap")
    func saturates() {
        #expect(Self.held(Allowance(unlimited: true), inBuckets: 5, withoutBuckets: .max) == .max)
        #expect(Self.held(Allowance(unlimited: true), inBuckets: .max, withoutBuckets: .max) == .max)
    }
}
