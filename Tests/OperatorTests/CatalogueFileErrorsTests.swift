import Credits
import Foundation
import LocalSigning
import StorekeeperRuntime
import TestSupport
import Testing

@testable import IntegrationSupport

/// What a newcomer sees for a catalogue they broke: the line, in words, and every wrong value at once.
@Suite("Catalogue file errors")
struct CatalogueFileErrorsTests {
    static let shipped = AppleSamples.repository.appendingPathComponent("config/tiers.yml")

    /// `config/tiers.yml` with `edit` applied, written to a file of its own; the problems `load` reports for it.
    func problems(_ edit: (inout [String]) -> Void) throws -> [String] {
        var lines = try String(contentsOf: Self.shipped, encoding: .utf8).components(separatedBy: "\n")
        edit(&lines)
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("tiers-\(UUID().uuidString).yml")
        try lines.joined(separator: "\n").write(to: file, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(at: file) }
        switch TierCatalogue.load(path: file.path) {
        case .success: return []
        case .failure(let error): return error.problems
        }
    }

    /// The 1-based line of the first line holding `text` outside a comment.
    static func line(of text: String, in lines: [String], after: Int = 0) -> Int {
        (lines.indices.first { $0 >= after && lines[$0].contains(text) && !lines[$0].trimmingCharacters(in: .whitespaces).hasPrefix("#") } ?? -1) + 1
    }

    @Test("text that is not YAML names its line and column")
    func syntax() throws {
        var broken = 0
        let found = try problems { lines in
            broken = Self.line(of: "per_cycle", in: lines)
            lines[broken - 1] += " ]"
        }
        #expect(found.count == 1, "\(found)")
        let problem = try #require(found.first)
        #expect(problem.contains("not valid YAML at line \(broken), column"), "\(problem)")
        #expect(!problem.contains("The given data"), "\(problem)")
    }

    @Test("every value of the wrong kind is reported, each with its line and what was given, in words")
    func wrongKinds() throws {
        var (first, second) = (0, 0)
        let found = try problems { lines in
            first = Self.line(of: "per_cycle:", in: lines)
            lines[first - 1] = lines[first - 1].replacingOccurrences(of: #"per_cycle: \d+"#, with: "per_cycle: many", options: .regularExpression)
            second = Self.line(of: "price:", in: lines, after: first)
            lines[second - 1] = lines[second - 1].replacingOccurrences(of: #"price: \d+"#, with: "price: cheap", options: .regularExpression)
        }
        #expect(found.count == 2, "\(found)")
        // Named as a reader finds them: the list item by its id, not its position.
        #expect(found.contains { $0.contains("line \(first): free.allowances.exports.per_cycle: must be a whole number, got \"many\"") }, "\(found)")
        #expect(
            found.contains {
                $0.contains("line \(second): tiers[") && $0.contains("].products[basic.monthly].price: must be a whole number, got \"cheap\"")
            }, "\(found)")
        #expect(!found.joined().contains("Scalar"), "\(found)")
    }

    @Test("a month of `simulate` is Apple's calendar month, clamped at the month's end; a year is twelve")
    func simulatedMonths() {
        func utc(_ text: String) -> Int64 { Int64(ISO8601DateFormatter().date(from: text)!.timeIntervalSince1970 * 1000) }
        var monthly = SimulatedEvent.Subscription(originalTransactionId: "1", productId: "pro.monthly", accountId: nil, bundleId: "b")
        monthly.months = 1
        #expect(monthly.periodEnd(startingAt: utc("2027-01-31T10:00:00Z")) == utc("2027-02-28T10:00:00Z"))
        #expect(monthly.periodEnd(startingAt: utc("2027-03-01T10:00:00Z")) == utc("2027-04-01T10:00:00Z"))
        #expect(monthly.periodStart(endingAt: utc("2027-04-01T10:00:00Z")) == utc("2027-03-01T10:00:00Z"))
        var annual = monthly
        annual.months = 12
        #expect(annual.periodEnd(startingAt: utc("2028-02-29T00:00:00Z")) == utc("2029-02-28T00:00:00Z"))
        // Without months, the days given: --period-days.
        let days = SimulatedEvent.Subscription(originalTransactionId: "1", productId: "p", accountId: nil, bundleId: "b", period: 7 * 86_400)
        #expect(days.periodEnd(startingAt: 0) == 7 * 86_400_000)
    }
}
