import Credits
import Foundation
import Yams

extension TierCatalogue {
    /// Reads and validates a catalogue file; every problem is returned, prefixed with the path.
    public static func load(path: String) -> Result<TierCatalogue, ConfigurationError> {
        let place = "STOREKEEPER_TIERS (\(path))"
        guard let text = try? String(contentsOfFile: path, encoding: .utf8) else {
            return .failure(ConfigurationError(problems: ["\(place): cannot read the file (set STOREKEEPER_TIERS to the catalogue the server uses)"]))
        }
        let unknown = ConfigurationKeys.tierCatalogue.problems(in: text, place: place)
        guard unknown.isEmpty else { return .failure(ConfigurationError(problems: unknown)) }
        let catalogue: TierCatalogue
        switch YAMLDiagnosis.decode(TierCatalogue.self, from: text, place: place) {
        case .success(let decoded): catalogue = decoded
        case .failure(let error): return .failure(error)
        }
        let problems = catalogue.problems()
        guard problems.isEmpty else { return .failure(ConfigurationError(problems: problems.map { "\(place): \($0)" })) }
        return .success(catalogue)
    }

    /// The catalogue of `STOREKEEPER_TIERS` (default `config/tiers.yml`) in `environment`, the value trimmed as
    /// ``StorekeeperConfiguration`` trims it.
    public static func load(environment: [String: String]) -> Result<TierCatalogue, ConfigurationError> {
        load(path: path(in: environment))
    }

    /// The file ``load(environment:)`` reads.
    public static func path(in environment: [String: String]) -> String {
        let path = environment["STOREKEEPER_TIERS"]?.trimmingCharacters(in: .whitespaces)
        return path.flatMap { $0.isEmpty ? nil : $0 } ?? defaultPath
    }

    public static let defaultPath = "config/tiers.yml"
}
