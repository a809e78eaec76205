/// A value the contract leaves open (`{}` in openapi.json: any JSON), such as an audit entry's `before` and `after`.
enum ArbitraryJSON: Decodable, Sendable, Equatable {
    case null
    case boolean(Bool)
    case number(Double)
    case string(String)
    case array([ArbitraryJSON])
    case object([String: ArbitraryJSON])

    init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if container.decodeNil() {
            self = .null
        } else if let value = try? container.decode(Bool.self) {
            self = .boolean(value)
        } else if let value = try? container.decode(Double.self) {
            self = .number(value)
        } else if let value = try? container.decode(String.self) {
            self = .string(value)
        } else if let value = try? container.decode([ArbitraryJSON].self) {
            self = .array(value)
        } else {
            self = .object(try container.decode([String: ArbitraryJSON].self))
        }
    }

    /// The member `key` of an object; nil for a missing key or another kind of value.
    subscript(key: String) -> ArbitraryJSON? {
        if case .object(let members) = self { members[key] } else { nil }
    }

    /// The texts of an array of strings; nil for another kind of value.
    var strings: [String]? {
        guard case .array(let elements) = self else { return nil }
        let texts = elements.compactMap(\.string)
        return texts.count == elements.count ? texts : nil
    }

    /// The text of a string; nil for another kind of value.
    var string: String? {
        if case .string(let text) = self { text } else { nil }
    }
}
