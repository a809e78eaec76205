import Foundation

/// Decodes `Decodable` values from JSON, about twice as fast as Foundation's `JSONDecoder` on App Store payloads
/// (a few dozen optional fields per object, kilobytes of base64 in strings), where decoding was a quarter of the cost
/// of verifying a notification.
///
/// The whole document is checked against RFC 8259 before anything is decoded — escapes, surrogate pairs, control
/// characters and UTF-8 in every string, read or not, as `JSONSerialization` and Apple's Python, Java and Node
/// libraries do (Foundation's `JSONDecoder` skips strings it does not read). An object repeating a key is refused:
/// Apple never sends one, and the libraries disagree on which value would win. Errors are the standard
/// `DecodingError`s with their coding paths. Unlike `JSONDecoder` it has no strategies: keys are used as
/// written and `Date`, `Data`, `URL` and `Decimal` decode through their own `Decodable` conformances — the payload
/// models carry dates as milliseconds and none of the others.
///
/// ```swift
/// let transaction = try PayloadDecoder().decode(TransactionPayload.self, from: bytes)
/// ```
public struct PayloadDecoder: Sendable {
    public init() {}

    public func decode<Value: Decodable>(_ type: Value.Type, from data: some DataProtocol) throws -> Value {
        try parse(data).decode(Value.self)
    }

    /// Checks and parses `data` once, for several decodes of the same document (a few fields first, the rest later).
    public func parse(_ data: some DataProtocol) throws -> PayloadDocument {
        do {
            return PayloadDocument(tape: try JSONTape(parsing: data))
        } catch {
            throw DecodingError.dataCorrupted(.init(codingPath: [], debugDescription: error.description, underlyingError: error))
        }
    }
}

/// A JSON document checked and parsed by ``PayloadDecoder``; decoding it again costs no second parse.
public struct PayloadDocument: Sendable {
    let tape: JSONTape

    public func decode<Value: Decodable>(_ type: Value.Type) throws -> Value {
        try TapeDecoder(tape: tape, index: 0).decode(Value.self)
    }
}

/// A syntax error, with the byte offset at which the document stopped being JSON.
public struct PayloadDecodingError: Error, Sendable, CustomStringConvertible {
    public let reason: String
    public let offset: Int

    static func syntax(_ reason: String, offset: Int) -> Self { .init(reason: reason, offset: offset) }

    public var description: String { "not JSON: \(reason) at byte \(offset)" }
}

/// The `Decoder` for one value of a tape; containers read primitives straight off the tape and create one only for
/// values with their own `init(from:)`.
final class TapeDecoder: Decoder {
    let tape: JSONTape
    let index: Int
    /// The decoder this one is nested in and the key or position leading here; the coding path is built from them
    /// only when asked for (in practice: for an error).
    private let parent: TapeDecoder?
    private let key: (any CodingKey)?
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    init(tape: JSONTape, index: Int, parent: TapeDecoder? = nil, key: (any CodingKey)? = nil) {
        self.tape = tape
        self.index = index
        self.parent = parent
        self.key = key
    }

    var codingPath: [any CodingKey] {
        guard let parent, let key else { return [] }
        return parent.codingPath + [key]
    }

    func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> {
        try read([String: Any].self) { index throws(JSONTape.ReadFailure) in try tape.require(.object, at: index) }
        return KeyedDecodingContainer(KeyedTapeContainer<Key>(decoder: self))
    }

    func unkeyedContainer() throws -> any UnkeyedDecodingContainer {
        try read([Any].self) { index throws(JSONTape.ReadFailure) in try tape.require(.array, at: index) }
        return UnkeyedTapeContainer(decoder: self)
    }

    func singleValueContainer() throws -> any SingleValueDecodingContainer { self }

    /// The value as `Value`: primitives read directly, anything else through its own `init(from:)`.
    func decode<Value: Decodable>(_ type: Value.Type) throws -> Value {
        switch type {
        case is String.Type: return try decode(String.self) as! Value
        case is Bool.Type: return try decode(Bool.self) as! Value
        case is Int.Type: return try decode(Int.self) as! Value
        case is Int32.Type: return try decode(Int32.self) as! Value
        case is Int64.Type: return try decode(Int64.self) as! Value
        case is Double.Type: return try decode(Double.self) as! Value
        default: return try Value(from: self)
        }
    }

    /// A decoder for the value at `index` of the same tape, one key or position deeper.
    func nested(at index: Int, key: any CodingKey) -> TapeDecoder {
        TapeDecoder(tape: tape, index: index, parent: self, key: key)
    }

    /// The value as a ``JSONValue``, built from the tokens' kinds.
    func jsonValue() throws -> JSONValue {
        try read(JSONValue.self) { index throws(JSONTape.ReadFailure) in try tape.jsonValue(at: index) }
    }

    private func read<T>(_ type: Any.Type, _ body: (Int) throws(JSONTape.ReadFailure) -> T) throws -> T {
        do {
            return try body(index)
        } catch {
            throw error.decodingError(type, codingPath: codingPath)
        }
    }
}

extension TapeDecoder: SingleValueDecodingContainer {
    func decodeNil() -> Bool { tape.tokens[index].kind == .null }

    func decode(_ type: Bool.Type) throws -> Bool { try read(type, tape.readBool) }
    func decode(_ type: String.Type) throws -> String { try read(type, tape.readString) }
    func decode(_ type: Double.Type) throws -> Double { try read(type, tape.readDouble) }
    func decode(_ type: Float.Type) throws -> Float { try read(type) { index throws(JSONTape.ReadFailure) in try tape.readFloat(at: index) } }
    func decode(_ type: Int.Type) throws -> Int { try decodeInteger(type) }
    func decode(_ type: Int8.Type) throws -> Int8 { try decodeInteger(type) }
    func decode(_ type: Int16.Type) throws -> Int16 { try decodeInteger(type) }
    func decode(_ type: Int32.Type) throws -> Int32 { try decodeInteger(type) }
    func decode(_ type: Int64.Type) throws -> Int64 { try decodeInteger(type) }
    func decode(_ type: UInt.Type) throws -> UInt { try decodeInteger(type) }
    func decode(_ type: UInt8.Type) throws -> UInt8 { try decodeInteger(type) }
    func decode(_ type: UInt16.Type) throws -> UInt16 { try decodeInteger(type) }
    func decode(_ type: UInt32.Type) throws -> UInt32 { try decodeInteger(type) }
    func decode(_ type: UInt64.Type) throws -> UInt64 { try decodeInteger(type) }

    private func decodeInteger<Integer: FixedWidthInteger>(_ type: Integer.Type) throws -> Integer {
        try read(type) { index throws(JSONTape.ReadFailure) in try tape.readInteger(at: index, as: type) }
    }
}
