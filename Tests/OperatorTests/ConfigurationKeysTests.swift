import Credits
import Foundation
import StorekeeperRuntime
import TestSupport
import Testing
import Yams

@testable import IntegrationSupport
@testable import StorekeeperRuntime

/// A misspelt key in any configuration file is an error naming the key, its place and the nearest known key — not a
/// setting silently lost (`trail_cap: 100` once loaded and left the trial cap off).
@Suite("Unknown configuration keys")
struct ConfigurationKeysTests {
    static let base: [String: String] = [
        "DATABASE_URL": "postgres://x@127.0.0.1/x", "STOREKEEPER_BUNDLE_ID": "com.example.app", "STOREKEEPER_ENVIRONMENTS": "Sandbox",
        "STOREKEEPER_ROOT_CERTIFICATES": AppleSamples.rootCertificate.path,
        "STOREKEEPER_TIERS": AppleSamples.repository.appendingPathComponent("config/tiers.yml").path,
    ]

    func problems(_ extra: [String: String]) -> [String] {
        do {
            _ = try StorekeeperConfiguration.load(environment: Self.base.merging(extra) { $1 })
            return []
        } catch {
            return error.problems
        }
    }

    @Test("a misspelt key in the catalogue, webhooks, offers and refund policy is named with its place and the nearest key")
    func misspelt() throws {
        let example = try String(contentsOf: AppleSamples.repository.appendingPathComponent("config/tiers.yml"), encoding: .utf8)
        #expect(example.contains("trial_cap"))
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("sk-keys-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let tiers = directory.appendingPathComponent("tiers.yml")
        try example.replacingOccurrences(of: "trial_cap", with: "trail_cap").write(to: tiers, atomically: true, encoding: .utf8)
        let catalogue = problems(["STOREKEEPER_TIERS": tiers.path])
        #expect(!catalogue.isEmpty && catalogue.allSatisfy { $0.contains("trail_cap is not a known key; did you mean trial_cap?") }, "\(catalogue)")
        // Each with its line, and list items by their id, as the file reads.
        #expect(catalogue.first?.contains(": line ") == true && catalogue.first?.contains("tiers[basic].allowances.") == true, "\(catalogue)")

        let webhooks = problems([
            "STOREKEEPER_WEBHOOKS": "{endpoints: [{name: app, url: 'http://127.0.0.1:9/hook', secret: ['whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw']}]}"
        ])
        #expect(
            webhooks.contains { $0.contains("STOREKEEPER_WEBHOOKS: line 1: endpoints[app].secret is not a known key; did you mean secrets?") },
            "\(webhooks)")
        let offers = problems([
            "STOREKEEPER_OFFERS": #"{"offers": [{"id": "w", "product": "pro.monthly", "audience": "lapsed", "once_per_acount": false}]}"#
        ])
        #expect(offers.contains { $0.contains("offers[w].once_per_acount is not a known key; did you mean once_per_account?") }, "\(offers)")
        let refunds = problems(["STOREKEEPER_REFUND_POLICY": "answerAfterMinute: 5"])
        #expect(refunds.contains { $0.contains("answerAfterMinute is not a known key; did you mean answerAfterMinutes?") }, "\(refunds)")
        #expect(problems([:]).isEmpty, "the example configuration has unknown keys: \(problems([:]))")
        // The documented examples of the other files load as they are.
        let examples = problems([
            "STOREKEEPER_WEBHOOKS": AppleSamples.repository.appendingPathComponent("config/webhooks.yml.example").path,
            "STOREKEEPER_OFFERS": AppleSamples.repository.appendingPathComponent("config/offers.yml.example").path,
        ])
        #expect(!examples.contains { $0.contains("not a known key") }, "\(examples)")
    }

    @Test("the catalogue's known keys are exactly what it encodes with every field set")
    func catalogueKeysMatchTheCodingKeys() throws {
        let full = Allowance(perCycle: 1, perDay: 1, unlimited: false, trialCap: 1)
        let catalogue = TierCatalogue(
            meters: [.init(id: "m", displayName: "M", description: "d")],
            featureDefinitions: [
                .init(
                    id: "f", displayName: "F", description: "d", type: .level, levels: ["off", "on"], teaser: "t", upgradeCallToAction: "u",
                    defaultValue: "off")
            ],
            free: .init(displayName: "Free", description: "d", highlights: ["h"], features: ["f": "off"], allowances: ["m": full]),
            tiers: [
                .init(
                    id: "t", level: 1, displayName: "T", description: "d", highlights: ["h"], features: ["f": "on"],
                    products: [.init(id: "p", type: .nonRenewing, period: "P1M", duration: "P1M", price: 1, currency: "USD")],
                    allowances: ["m": full],
                    grantableOnly: true, group: "g")
            ],
            topUps: [.init(id: "u", meter: "m", credits: 1, price: 1, currency: "USD")], upgradeCredits: .fresh)
        let yaml = try YAMLEncoder().encode(catalogue)
        #expect(ConfigurationKeys.tierCatalogue.problems(in: yaml, place: "encoded").isEmpty, "\(yaml)")
        // And a key the schema lacks is found: the check is not empty by construction.
        #expect(!ConfigurationKeys.tierCatalogue.problems(in: yaml + "\nextra: 1\n", place: "encoded").isEmpty)
    }
}
