import Entitlements

/// A feature the app gates on, and how its values are typed (`feature_definitions` of the catalogue).
public struct FeatureDefinition: Codable, Sendable, Equatable {
    public var id: String
    public var displayName: String
    public var description: String?
    public var type: FeatureType
    /// A `level` feature's values, lowest first (`off`, `teaser`, `on`, `choice`).
    public var levels: [String]?
    /// What a paywall shows to a customer whose tier lacks the feature.
    public var teaser: String?
    /// The paywall's call to action for it.
    public var upgradeCallToAction: String?
    /// The value of tiers that do not set one (else the free tier's, else the type's lowest).
    public var defaultValue: String?

    enum CodingKeys: String, CodingKey {
        case id, description, type, levels, teaser
        case displayName = "display_name"
        case upgradeCallToAction = "upgrade_call_to_action"
        case defaultValue = "default"
    }

    public init(
        id: String, displayName: String, description: String? = nil, type: FeatureType, levels: [String]? = nil, teaser: String? = nil,
        upgradeCallToAction: String? = nil, defaultValue: String? = nil
    ) {
        self.id = id
        self.displayName = displayName
        self.description = description
        self.type = type
        self.levels = levels
        self.teaser = teaser
        self.upgradeCallToAction = upgradeCallToAction
        self.defaultValue = defaultValue
    }

    /// The typed value of `text`, or why it is not one of this feature's values.
    public func value(of text: String) -> Result<FeatureValue, FeatureValueProblem> {
        switch type {
        case .boolean:
            switch text {
            case "true": return .success(.boolean(true))
            case "false": return .success(.boolean(false))
            default: return .failure(FeatureValueProblem(description: "\"\(text)\" is not true or false"))
            }
        case .number:
            guard let number = Double(text), number.isFinite else { return .failure(FeatureValueProblem(description: "\"\(text)\" is not a number")) }
            // Every client reads it exactly, JavaScript's too.
            guard abs(number) <= 9_007_199_254_740_991 else {
                return .failure(FeatureValueProblem(description: "\(text) is beyond ±2⁵³ − 1, which not every client reads exactly"))
            }
            return .success(.number(number))
        case .text:
            return .success(.text(text))
        case .level:
            let levels = levels ?? []
            guard levels.contains(text) else {
                return .failure(FeatureValueProblem(description: "\"\(text)\" is not one of its levels (\(levels.joined(separator: ", ")))"))
            }
            return .success(.level(text))
        case .unknown(let name):
            return .failure(FeatureValueProblem(description: "its type \(name) is not boolean, number, text or level"))
        }
    }

    /// The lowest value of the type: `false`, `0`, `""`, the first level.
    public var lowestValue: FeatureValue {
        switch type {
        case .boolean: return .boolean(false)
        case .number: return .number(0)
        case .level: return .level(levels?.first ?? "")
        case .text, .unknown: return .text("")
        }
    }
}

/// Why a written value does not fit its feature.
public struct FeatureValueProblem: Error, Sendable, CustomStringConvertible {
    public var description: String
}

/// How a feature's values are typed.
public enum FeatureType: Hashable, Sendable, TextCoded {
    case boolean
    case number
    case text
    /// One of the definition's ordered `levels`.
    case level
    case unknown(String)

    public init(_ text: String) {
        switch text {
        case "boolean": self = .boolean
        case "number": self = .number
        case "text": self = .text
        case "level": self = .level
        default: self = .unknown(text)
        }
    }

    public var text: String {
        switch self {
        case .boolean: return "boolean"
        case .number: return "number"
        case .text: return "text"
        case .level: return "level"
        case .unknown(let text): return text
        }
    }
}

/// A feature's value for a tier, as the app reads it: a JSON boolean, number or string.
public enum FeatureValue: Hashable, Sendable, Encodable {
    case boolean(Bool)
    case number(Double)
    case text(String)
    case level(String)

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        switch self {
        case .boolean(let value): try container.encode(value)
        case .number(let value):
            // Whole numbers are written as integers (`3`, not `3.0`).
            if value == value.rounded(), abs(value) < 9e15 { try container.encode(Int64(value)) } else { try container.encode(value) }
        case .text(let value), .level(let value): try container.encode(value)
        }
    }
}

extension TierCatalogue {
    /// Every tier's feature values (`free` included), resolved once: a status read looks its tier's up.
    public func featureTable() -> [String: [String: FeatureValue]] {
        Dictionary(uniqueKeysWithValues: (["free"] + tiers.map(\.id)).map { ($0, features(ofTier: $0)) })
    }

    /// Every feature's value for `tierId` (`free` for the free tier): the tier's own, else the free tier's, else the
    /// definition's default, else the type's lowest. A value that does not fit its definition (refused at start)
    /// counts as absent.
    public func features(ofTier tierId: String?) -> [String: FeatureValue] {
        let own = tierId.flatMap { id in id == "free" ? nil : tier(id: id)?.features } ?? [:]
        var values: [String: FeatureValue] = [:]
        for definition in featureDefinitions {
            let candidates = [own[definition.id], free.features[definition.id], definition.defaultValue].compactMap { $0 }
            values[definition.id] = candidates.lazy.compactMap { try? definition.value(of: $0).get() }.first ?? definition.lowestValue
        }
        return values
    }
}

/// Reads a tier's `highlights` and `features`: `features` is a mapping of feature values, or — as written before
/// typed features — a list of display bullets, read as the highlights.
enum FeatureValues {
    static func decode<Key: CodingKey>(_ container: KeyedDecodingContainer<Key>, highlights: Key, features: Key) throws
        -> (highlights: [String]?, features: [String: String], wereBullets: Bool)
    {
        let written = try container.decodeIfPresent([String].self, forKey: highlights)
        if let bullets = try? container.decodeIfPresent([String].self, forKey: features) {
            return (written ?? bullets, [:], true)
        }
        return (written, try container.decodeIfPresent([String: String].self, forKey: features) ?? [:], false)
    }
}
