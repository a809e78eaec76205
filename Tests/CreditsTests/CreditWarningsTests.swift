import Credits
import Foundation
import Testing

/// `warn_at` thresholds: which a fall of the remaining balance crosses, written from what the catalogue says
/// (`0.2` is a fifth of the allowance, `50` is fifty credits, `0` is spent out) in integer arithmetic of its own.
@Suite("Credit warnings: warn_at thresholds crossed downward")
struct CreditWarningsTests {
    @Test("a fifth, 3 credits and 0: every fall from every balance of allowances 1-40 crosses exactly what the definition says")
    func exhaustive() {
        let thresholds = [WarningThreshold(0.2), WarningThreshold(3), WarningThreshold(0)]
        for allowance in Int64(1)...40 {
            for before in Int64(0)...(allowance + 5) {
                for after in Int64(0)...before {
                    let crossed = CreditWarnings.crossed(thresholds, allowance: Allowance(perCycle: allowance), before: before, after: after)
                    // Remaining r is "at or below a fifth" when 5r ≤ allowance: crossed when it was not before and is now.
                    var expected: Set<String> = []
                    if 5 * before > allowance, 5 * after <= allowance { expected.insert("low \(allowance / 5)") }
                    if before > 3, after <= 3 { expected.insert("low 3") }
                    if before > 0, after == 0 { expected.insert("exhausted 0") }
                    let told = crossed.map { "\($0.exhausted ? "exhausted" : "low") \($0.credits)" }
                    #expect(Set(told) == expected, "allowance \(allowance): \(before) → \(after)")
                    #expect(told.count == Set(told).count, "one crossing per kind and balance")
                }
            }
        }
    }

    @Test("spending 100 credits one at a time warns twice: at 20 left (low) and at 0 (exhausted); nothing on the way back up")
    func walk() {
        let thresholds = [WarningThreshold(0.2), WarningThreshold(0)]
        var told: [(Int64, Bool)] = []
        for remaining in stride(from: Int64(99), through: 0, by: -1) {
            for crossing in CreditWarnings.crossed(thresholds, allowance: Allowance(perCycle: 100), before: remaining + 1, after: remaining) {
                told.append((remaining, crossing.exhausted))
            }
        }
        #expect(told.map(\.0) == [20, 0])
        #expect(told.map(\.1) == [false, true])
        for remaining in Int64(0)..<100 {
            #expect(CreditWarnings.crossed(thresholds, allowance: Allowance(perCycle: 100), before: remaining, after: remaining + 1).isEmpty)
        }
        // One spend of everything crosses both at once.
        #expect(CreditWarnings.crossed(thresholds, allowance: Allowance(perCycle: 100), before: 100, after: 0).map(\.credits) == [20, 0])
    }

    @Test("a daily quota is the allowance of a share; an unlimited meter never warns; without an allowance only credits count")
    func allowances() {
        #expect(CreditWarnings.crossed([WarningThreshold(0.5)], allowance: Allowance(perDay: 10), before: 6, after: 5).map(\.credits) == [5])
        #expect(
            CreditWarnings.crossed([WarningThreshold(0), WarningThreshold(5)], allowance: Allowance(unlimited: true), before: 6, after: 0).isEmpty)
        #expect(CreditWarnings.crossed([WarningThreshold(0.5), WarningThreshold(5)], allowance: nil, before: 6, after: 5).map(\.credits) == [5])
        // A share is a `credits.low` even where it rounds to 0; `0` as written is `credits.exhausted`; two shares that
        // round to one balance are one crossing.
        let atZero = CreditWarnings.crossed(
            [WarningThreshold(0.01), WarningThreshold(0.015), WarningThreshold(0)], allowance: Allowance(perCycle: 50), before: 1, after: 0)
        #expect(atZero.map(\.exhausted) == [false, true])
        // A decimal share is the decimal's: 0.29 and 0.57 of 100 are 29 and 57, not 28 and 56.
        #expect(WarningThreshold(0.29).credits(of: Allowance(perCycle: 100)) == 29)
        #expect(WarningThreshold(0.57).credits(of: Allowance(perCycle: 100)) == 57)
        // During a free trial the window grants trial_cap: a fifth of 50, not of 200.
        #expect(
            CreditWarnings.crossed([WarningThreshold(0.2)], allowance: Allowance(perCycle: 200, trialCap: 50), isTrial: true, before: 11, after: 10)
                .map(\.credits) == [10])
        #expect(
            CreditWarnings.crossed([WarningThreshold(0.2)], allowance: Allowance(perCycle: 200, trialCap: 50), before: 41, after: 40).map(\.credits)
                == [40])
    }

    @Test("warn_at as written: below 1 a share, whole numbers credits, 0 spent out; anything else is a start-up problem naming the meter")
    func decoding() throws {
        let json = #"{"id": "ai", "display_name": "AI", "warn_at": [0.2, 0, 50, 1.5, -1, "x"]}"#
        let meter = try JSONDecoder().decode(TierCatalogue.Meter.self, from: Data(json.utf8))
        #expect(meter.warnAt == [.share(0.2), .credits(0), .credits(50), .unknown("1.5"), .unknown("-1"), .unknown("\"x\"")])
        var written = meter
        written.warnAt = Array(meter.warnAt.prefix(3))
        let again = try JSONDecoder().decode(TierCatalogue.Meter.self, from: JSONEncoder().encode(written))
        #expect(again == written)
        let catalogue = TierCatalogue(
            meters: [meter], free: .init(displayName: "Free", allowances: ["ai": Allowance(perDay: 5)]),
            tiers: [
                .init(
                    id: "pro", level: 1, displayName: "Pro", products: [.init(id: "pro.monthly", period: "P1M", price: 9990, currency: "USD")],
                    allowances: ["ai": Allowance(perCycle: 100)])
            ],
            topUps: [])
        let problems = catalogue.problems()
        #expect(problems.filter { $0.hasPrefix("meters.ai.warn_at") }.count == 3, "\(problems)")
        #expect(problems.contains("meters.ai.warn_at: \"x\" is neither a share below 1 nor a whole number of credits"), "\(problems)")
        #expect(problems.contains("meters.ai.warn_at: 1.5 is neither a share below 1 nor a whole number of credits"), "\(problems)")
    }
}
