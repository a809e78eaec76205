/// Any JSON value, kept as received — for objects Storekeeper stores but does not interpret (`advancedCommerceInfo`).
///
/// ``PayloadDecoder`` builds it straight from the kind of each token, in one pass. Other decoders (stored copies read
/// back with Foundation) go through `init(from:)`, which asks the decoder for the value's kind the only way `Decoder`
/// allows — by trying — and is meant for documents already checked by ``PayloadDecoder``.
public indirect enum JSONValue: Codable, Sendable, Equatable {
    case null
    case bool(Bool)
    case number(Double)
    case string(String)
    case array([JSONValue])
    case object([String: JSONValue])

    public init(from decoder: any Decoder) throws {
        if let tape = decoder as? TapeDecoder {
            self = try tape.jsonValue()
            return
        }
        let container = try decoder.singleValueContainer()
        if container.decodeNil() {
            self = .null
        } else if let value = try? container.decode(Bool.self) {
            self = .bool(value)
        } else if let value = try? container.decode(Double.self) {
            self = .number(value)
        } else if let value = try? container.decode(String.self) {
            self = .string(value)
        } else if let value = try? container.decode([JSONValue].self) {
            self = .array(value)
        } else {
            self = .object(try container.decode([String: JSONValue].self))
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        switch self {
        case .null: try container.encodeNil()
        case .bool(let value): try container.encode(value)
        case .number(let value): try container.encode(value)
        case .string(let value): try container.encode(value)
        case .array(let value): try container.encode(value)
        case .object(let value): try container.encode(value)
        }
    }
}

extension JSONTape {
    /// The value at `index` and everything below it, by token kind (depth is bounded by the parser's limit).
    func jsonValue(at index: Int) throws(ReadFailure) -> JSONValue {
        let token = tokens[index]
        switch token.kind {
        case .null: return .null
        case .true: return .bool(true)
        case .false: return .bool(false)
        case .number: return .number(try readDouble(at: index))
        case .string: return .string(try readString(at: index))
        case .array:
            var elements: [JSONValue] = []
            elements.reserveCapacity(Int(token.count))
            var position = index + 1
            while position < Int(token.end) {
                elements.append(try jsonValue(at: position))
                position = next(after: position)
            }
            return .array(elements)
        case .object:
            var members: [String: JSONValue] = [:]
            members.reserveCapacity(Int(token.count))
            var position = index + 1
            while position < Int(token.end) {
                members[try readString(at: position)] = try jsonValue(at: position + 1)
                position = next(after: position + 1)
            }
            return .object(members)
        }
    }
}
