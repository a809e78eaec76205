/// An array of a tape as an unkeyed container: walks its elements in order.
struct UnkeyedTapeContainer: UnkeyedDecodingContainer {
    private let decoder: TapeDecoder
    private let tape: JSONTape
    /// Tape index of the current element; `end` when at the end.
    private var position: Int
    private let end: Int
    let count: Int?
    private(set) var currentIndex = 0

    init(decoder: TapeDecoder) {
        self.decoder = decoder
        self.tape = decoder.tape
        let array = tape.tokens[decoder.index]
        self.position = decoder.index + 1
        self.end = Int(array.end)
        self.count = Int(array.count)
    }

    var codingPath: [any CodingKey] { decoder.codingPath }
    var isAtEnd: Bool { position >= end }

    /// Reads the current element off the tape and moves past it.
    private mutating func read<T>(_ type: Any.Type, _ body: (Int) throws(JSONTape.ReadFailure) -> T) throws -> T {
        let key = TapeCodingKey(intValue: currentIndex)
        guard !isAtEnd else {
            throw DecodingError.valueNotFound(type, .init(codingPath: codingPath + [key], debugDescription: "Unkeyed container is at end."))
        }
        do {
            let value = try body(position)
            position = tape.next(after: position)
            currentIndex += 1
            return value
        } catch {
            throw error.decodingError(type, codingPath: codingPath + [key])
        }
    }

    /// The decoder of the current element, then moves past it.
    private mutating func nextDecoder(_ type: Any.Type) throws -> TapeDecoder {
        let (decoder, key) = (decoder, TapeCodingKey(intValue: currentIndex))
        return try read(type) { index in decoder.nested(at: index, key: key) }
    }

    private mutating func integer<Integer: FixedWidthInteger>(_ type: Integer.Type) throws -> Integer {
        let tape = tape
        return try read(type) { index throws(JSONTape.ReadFailure) in try tape.readInteger(at: index, as: type) }
    }

    mutating func decodeNil() throws -> Bool {
        guard !isAtEnd, tape.tokens[position].kind == .null else {
            return try isAtEnd ? read(Never.self) { _ in false } : false
        }
        position += 1
        currentIndex += 1
        return true
    }

    mutating func decode<T: Decodable>(_ type: T.Type) throws -> T { try nextDecoder(type).decode(type) }
    mutating func decode(_ type: Bool.Type) throws -> Bool {
        let tape = tape
        return try read(type, tape.readBool)
    }
    mutating func decode(_ type: String.Type) throws -> String {
        let tape = tape
        return try read(type, tape.readString)
    }
    mutating func decode(_ type: Double.Type) throws -> Double {
        let tape = tape
        return try read(type, tape.readDouble)
    }
    mutating func decode(_ type: Float.Type) throws -> Float {
        let tape = tape
        return try read(type, tape.readFloat)
    }
    mutating func decode(_ type: Int.Type) throws -> Int { try integer(type) }
    mutating func decode(_ type: Int8.Type) throws -> Int8 { try integer(type) }
    mutating func decode(_ type: Int16.Type) throws -> Int16 { try integer(type) }
    mutating func decode(_ type: Int32.Type) throws -> Int32 { try integer(type) }
    mutating func decode(_ type: Int64.Type) throws -> Int64 { try integer(type) }
    mutating func decode(_ type: UInt.Type) throws -> UInt { try integer(type) }
    mutating func decode(_ type: UInt8.Type) throws -> UInt8 { try integer(type) }
    mutating func decode(_ type: UInt16.Type) throws -> UInt16 { try integer(type) }
    mutating func decode(_ type: UInt32.Type) throws -> UInt32 { try integer(type) }
    mutating func decode(_ type: UInt64.Type) throws -> UInt64 { try integer(type) }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type) throws -> KeyedDecodingContainer<NestedKey> {
        try nextDecoder([String: Any].self).container(keyedBy: type)
    }

    mutating func nestedUnkeyedContainer() throws -> any UnkeyedDecodingContainer {
        try nextDecoder([Any].self).unkeyedContainer()
    }

    mutating func superDecoder() throws -> any Decoder { try nextDecoder(Any.self) }
}
