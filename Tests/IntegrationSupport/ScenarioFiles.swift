import Foundation

/// What the Stripe and Play scenario files share: each file decoded and named, and the catalogue a scenario asks for.
enum ScenarioFiles {
    /// Every `.json` file of `folder` (beside the calling test file), decoded in name order, each told its file name.
    static func load<Scenario: Decodable>(_ folder: String, besides testFile: String = #filePath, naming: (inout Scenario, String) -> Void)
        -> [Scenario]
    {
        let directory = URL(fileURLWithPath: testFile).deletingLastPathComponent().appendingPathComponent(folder)
        let files = (try? FileManager.default.contentsOfDirectory(atPath: directory.path).filter { $0.hasSuffix(".json") }.sorted()) ?? []
        return files.map { file in
            var scenario = try! JSONDecoder().decode(Scenario.self, from: Data(contentsOf: directory.appendingPathComponent(file)))
            naming(&scenario, file)
            return scenario
        }
    }

    /// A copy of `config/tiers.yml` with `upgrade_credits: policy`, in a temporary file the caller removes; `nil` for
    /// the default catalogue (`prorate`).
    static func catalogue(upgradeCredits policy: String?) throws -> String? {
        guard let policy else { return nil }
        let catalogue = try String(contentsOfFile: "config/tiers.yml", encoding: .utf8)
            .replacingOccurrences(of: "upgrade_credits: prorate", with: "upgrade_credits: \(policy)")
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("tiers-\(UUID().uuidString).yml").path
        try catalogue.write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }
}
