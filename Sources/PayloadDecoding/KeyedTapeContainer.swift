/// An object of a tape as a keyed container. Its members are listed once (their keys are unique: the parser refuses
/// repeats); a key is found by comparing bytes, starting after the previous hit, since models usually ask for keys in
/// the order the JSON lists them.
///
/// A class, not a struct: the standard library's type-erasing box copies the container on every call, and one
/// reference is cheaper to copy than three.
final class KeyedTapeContainer<Key: CodingKey>: KeyedDecodingContainerProtocol {
    private let decoder: TapeDecoder
    private let tape: JSONTape
    /// Each member's key: its tape index (the value follows at `+ 1`) and a cheap summary of its bytes, so a lookup
    /// compares bytes only where the summaries match.
    private let members: [(index: Int, summary: UInt64)]
    /// The unescaped text of escaped keys, by tape index: unescaped once here, not on every comparison.
    private let unescapedKeys: [Int: [UInt8]]
    /// Where the next lookup starts.
    private var cursor = 0

    init(decoder: TapeDecoder) {
        self.decoder = decoder
        self.tape = decoder.tape
        let object = tape.tokens[decoder.index]
        var members: [(index: Int, summary: UInt64)] = []
        var unescapedKeys: [Int: [UInt8]] = [:]
        members.reserveCapacity(Int(object.count))
        var position = decoder.index + 1
        while position < Int(object.end) {
            let key = tape.tokens[position]
            let raw = UnsafeBufferPointer(rebasing: tape.bytes[Int(key.start)..<Int(key.end)])
            if key.traits.contains(.escaped) {
                // The parser checked the escapes, so unescaping succeeds.
                let text = JSONTape.unescape(raw) ?? []
                unescapedKeys[position] = text
                members.append((position, text.withUnsafeBufferPointer(Self.summary(of:))))
            } else {
                members.append((position, Self.summary(of: raw)))
            }
            position = tape.next(after: position + 1)
        }
        self.members = members
        self.unescapedKeys = unescapedKeys
    }

    /// Length and the first, middle and last two bytes: equal keys have equal summaries.
    private static func summary(of key: UnsafeBufferPointer<UInt8>) -> UInt64 {
        guard !key.isEmpty else { return 0 }
        let count = key.count
        return UInt64(count) | UInt64(key[0]) << 16 | UInt64(key[count / 2]) << 24 | UInt64(key[count - 1]) << 32
            | UInt64(key[max(0, count - 2)]) << 40
    }

    var codingPath: [any CodingKey] { decoder.codingPath }

    var allKeys: [Key] {
        members.compactMap { index, _ in (try? tape.readString(at: index)).flatMap(Key.init(stringValue:)) }
    }

    func contains(_ key: Key) -> Bool { valueIndex(of: key.stringValue) != nil }

    private func valueIndex(of name: String) -> Int? {
        var name = name
        return name.withUTF8 { expected in
            let summary = Self.summary(of: expected)
            for offset in 0..<members.count {
                let position = (cursor + offset) % members.count
                let member = members[position]
                guard member.summary == summary else { continue }
                let equal =
                    if let text = unescapedKeys[member.index] { text.elementsEqual(expected) } else {
                        tape.key(at: member.index, equals: expected)
                    }
                if equal {
                    cursor = position + 1
                    return member.index + 1
                }
            }
            return nil
        }
    }

    private func keyNotFound(_ key: any CodingKey) -> DecodingError {
        .keyNotFound(key, .init(codingPath: codingPath, debugDescription: "No value associated with key \(key.stringValue)."))
    }

    /// Reads `key`'s value off the tape; a missing key throws `keyNotFound`.
    private func read<T>(_ type: Any.Type, _ key: Key, _ body: (Int) throws(JSONTape.ReadFailure) -> T) throws -> T {
        guard let index = valueIndex(of: key.stringValue) else { throw keyNotFound(key) }
        do {
            return try body(index)
        } catch {
            throw error.decodingError(type, codingPath: codingPath + [key])
        }
    }

    /// Reads `key`'s value off the tape; `nil` when the key is missing or its value is `null`.
    private func readIfPresent<T>(_ type: Any.Type, _ key: Key, _ body: (Int) throws(JSONTape.ReadFailure) -> T) throws -> T? {
        guard let index = valueIndex(of: key.stringValue), tape.tokens[index].kind != .null else { return nil }
        do {
            return try body(index)
        } catch {
            throw error.decodingError(type, codingPath: codingPath + [key])
        }
    }

    private func integer<Integer: FixedWidthInteger>(_ type: Integer.Type, _ key: Key) throws -> Integer {
        try read(type, key) { index throws(JSONTape.ReadFailure) in try tape.readInteger(at: index, as: type) }
    }

    private func integerIfPresent<Integer: FixedWidthInteger>(_ type: Integer.Type, _ key: Key) throws -> Integer? {
        try readIfPresent(type, key) { index throws(JSONTape.ReadFailure) in try tape.readInteger(at: index, as: type) }
    }

    func decodeNil(forKey key: Key) throws -> Bool {
        try read(Never.self, key) { index throws(JSONTape.ReadFailure) in tape.tokens[index].kind == .null }
    }

    func decode<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T {
        guard let index = valueIndex(of: key.stringValue) else { throw keyNotFound(key) }
        return try decoder.nested(at: index, key: key).decode(type)
    }

    func decodeIfPresent<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T? {
        guard let index = valueIndex(of: key.stringValue), tape.tokens[index].kind != .null else { return nil }
        return try decoder.nested(at: index, key: key).decode(type)
    }

    func decode(_ type: Bool.Type, forKey key: Key) throws -> Bool { try read(type, key, tape.readBool) }
    func decode(_ type: String.Type, forKey key: Key) throws -> String { try read(type, key, tape.readString) }
    func decode(_ type: Double.Type, forKey key: Key) throws -> Double { try read(type, key, tape.readDouble) }
    func decode(_ type: Float.Type, forKey key: Key) throws -> Float { try read(type, key, tape.readFloat) }
    func decode(_ type: Int.Type, forKey key: Key) throws -> Int { try integer(type, key) }
    func decode(_ type: Int8.Type, forKey key: Key) throws -> Int8 { try integer(type, key) }
    func decode(_ type: Int16.Type, forKey key: Key) throws -> Int16 { try integer(type, key) }
    func decode(_ type: Int32.Type, forKey key: Key) throws -> Int32 { try integer(type, key) }
    func decode(_ type: Int64.Type, forKey key: Key) throws -> Int64 { try integer(type, key) }
    func decode(_ type: UInt.Type, forKey key: Key) throws -> UInt { try integer(type, key) }
    func decode(_ type: UInt8.Type, forKey key: Key) throws -> UInt8 { try integer(type, key) }
    func decode(_ type: UInt16.Type, forKey key: Key) throws -> UInt16 { try integer(type, key) }
    func decode(_ type: UInt32.Type, forKey key: Key) throws -> UInt32 { try integer(type, key) }
    func decode(_ type: UInt64.Type, forKey key: Key) throws -> UInt64 { try integer(type, key) }

    func decodeIfPresent(_ type: Bool.Type, forKey key: Key) throws -> Bool? { try readIfPresent(type, key, tape.readBool) }
    func decodeIfPresent(_ type: String.Type, forKey key: Key) throws -> String? { try readIfPresent(type, key, tape.readString) }
    func decodeIfPresent(_ type: Double.Type, forKey key: Key) throws -> Double? { try readIfPresent(type, key, tape.readDouble) }
    func decodeIfPresent(_ type: Float.Type, forKey key: Key) throws -> Float? { try readIfPresent(type, key, tape.readFloat) }
    func decodeIfPresent(_ type: Int.Type, forKey key: Key) throws -> Int? { try integerIfPresent(type, key) }
    func decodeIfPresent(_ type: Int8.Type, forKey key: Key) throws -> Int8? { try integerIfPresent(type, key) }
    func decodeIfPresent(_ type: Int16.Type, forKey key: Key) throws -> Int16? { try integerIfPresent(type, key) }
    func decodeIfPresent(_ type: Int32.Type, forKey key: Key) throws -> Int32? { try integerIfPresent(type, key) }
    func decodeIfPresent(_ type: Int64.Type, forKey key: Key) throws -> Int64? { try integerIfPresent(type, key) }
    func decodeIfPresent(_ type: UInt.Type, forKey key: Key) throws -> UInt? { try integerIfPresent(type, key) }
    func decodeIfPresent(_ type: UInt8.Type, forKey key: Key) throws -> UInt8? { try integerIfPresent(type, key) }
    func decodeIfPresent(_ type: UInt16.Type, forKey key: Key) throws -> UInt16? { try integerIfPresent(type, key) }
    func decodeIfPresent(_ type: UInt32.Type, forKey key: Key) throws -> UInt32? { try integerIfPresent(type, key) }
    func decodeIfPresent(_ type: UInt64.Type, forKey key: Key) throws -> UInt64? { try integerIfPresent(type, key) }

    func nestedContainer<NestedKey: CodingKey>(
        keyedBy type: NestedKey.Type, forKey key: Key
    ) throws -> KeyedDecodingContainer<NestedKey> {
        guard let index = valueIndex(of: key.stringValue) else { throw keyNotFound(key) }
        return try decoder.nested(at: index, key: key).container(keyedBy: type)
    }

    func nestedUnkeyedContainer(forKey key: Key) throws -> any UnkeyedDecodingContainer {
        guard let index = valueIndex(of: key.stringValue) else { throw keyNotFound(key) }
        return try decoder.nested(at: index, key: key).unkeyedContainer()
    }

    func superDecoder() throws -> any Decoder { try superDecoder(TapeCodingKey(stringValue: "super")) }
    func superDecoder(forKey key: Key) throws -> any Decoder { try superDecoder(key) }

    private func superDecoder(_ key: any CodingKey) throws -> any Decoder {
        guard let index = valueIndex(of: key.stringValue) else { throw keyNotFound(key) }
        return decoder.nested(at: index, key: key)
    }
}

/// A coding key made from a string or a position (arrays, `super`).
struct TapeCodingKey: CodingKey {
    let stringValue: String
    let intValue: Int?

    init(stringValue: String) {
        self.stringValue = stringValue
        self.intValue = nil
    }

    init(intValue: Int) {
        self.stringValue = "Index \(intValue)"
        self.intValue = intValue
    }
}
