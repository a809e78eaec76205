import Foundation

/// A JSON document checked against RFC 8259 and flattened, in one pass, into a *tape* of tokens that point back into
/// the bytes. Nothing is materialized while parsing: strings stay byte ranges until a decoder asks for them, numbers
/// stay text until asked for as a given type, and object keys are compared as bytes. Immutable once parsed; its
/// buffers are read without reference counting, which is most of what makes decoding cheap.
final class JSONTape: @unchecked Sendable {
    /// One JSON value; containers are followed on the tape by their elements (objects: key, value, key, value, …).
    struct Token: Sendable {
        enum Kind: UInt8, Sendable {
            case null, `false`, `true`, number, string, object, array
        }

        /// What a reader must know beyond the kind.
        struct Traits: OptionSet, Sendable {
            let rawValue: UInt8
            /// A string holding at least one escape.
            static let escaped = Traits(rawValue: 1)
            /// A number with a fraction or an exponent.
            static let notInteger = Traits(rawValue: 2)
        }

        var kind: Kind
        var traits: Traits
        /// Strings and numbers: the byte range (strings without their quotes). Containers: `start` unused.
        var start: Int32
        /// Strings and numbers: end of the byte range. Containers: the tape index just past their last descendant.
        var end: Int32
        /// Containers: elements (arrays) or members (objects).
        var count: Int32
    }

    /// Limits that keep every document linear to parse and to decode, whatever its shape. Apple's payloads nest
    /// four deep, hold a few dozen keys per object and their longest string is a nested JWS of a few dozen KiB.
    enum Limit {
        /// Containers nested deeper are refused (decoding recurses once per level).
        static let depth = 64
        /// Objects with more members are refused.
        static let members = 1_024
        /// Strings longer than this many bytes, as written, are refused.
        static let stringBytes = 256 * 1024
        /// Numbers longer than this many characters are refused (conversion of a long number is not linear).
        static let numberCharacters = 64
        /// Documents of more values and keys than this are refused: the tape takes 16 bytes a token, and a 512-KiB body
        /// of `[0,0,…]` made 262,144 of them — 13 MiB with the array's growth and the copy, outside the request-body
        /// budget. 65,536 is 1 MiB of tape; Apple's and Google's notifications hold about a hundred, a Stripe event a
        /// few thousand.
        static let tokens = 65_536
    }

    let bytes: UnsafeMutableBufferPointer<UInt8>
    let tokens: UnsafeMutableBufferPointer<Token>

    /// Parses `data`; any deviation from JSON (trailing content, bad escapes, control characters or invalid UTF-8 in
    /// strings, leading zeros, lone minus, …) throws with the byte offset.
    init(parsing data: some DataProtocol) throws(PayloadDecodingError) {
        guard data.count < Int32.max else { throw .syntax("document too large", offset: 0) }
        let bytes = UnsafeMutableBufferPointer<UInt8>.allocate(capacity: max(data.count, 1))
        _ = data.copyBytes(to: bytes)
        var parser = Parser(capacityHint: min(data.count / 16, Limit.tokens))
        do {
            try parser.parseDocument(UnsafeBufferPointer(rebasing: bytes[..<data.count]))
        } catch {
            bytes.deallocate()
            throw error
        }
        self.bytes = bytes
        self.tokens = .allocate(capacity: parser.tokens.count)
        _ = self.tokens.initialize(from: parser.tokens)
    }

    deinit {
        bytes.deallocate()
        tokens.deallocate()
    }

    /// The tape index of the value after the one at `index` (skips a container's descendants).
    func next(after index: Int) -> Int {
        let token = tokens[index]
        return token.kind == .object || token.kind == .array ? Int(token.end) : index + 1
    }
}

extension JSONTape {
    private struct Parser {
        var tokens: [Token] = []
        var index = 0

        init(capacityHint: Int) {
            tokens.reserveCapacity(max(16, capacityHint))
        }

        mutating func parseDocument(_ input: UnsafeBufferPointer<UInt8>) throws(PayloadDecodingError) {
            // A UTF-8 byte order mark may be ignored (RFC 8259 §8.1), as Foundation does.
            if input.count >= 3, input[0] == 0xEF, input[1] == 0xBB, input[2] == 0xBF { index = 3 }
            skipWhitespace(input)
            try parseValue(input, depth: 0)
            skipWhitespace(input)
            guard index == input.count else { throw .syntax("unexpected content after the document", offset: index) }
        }

        private mutating func parseValue(_ input: UnsafeBufferPointer<UInt8>, depth: Int) throws(PayloadDecodingError) {
            guard index < input.count else { throw .syntax("unexpected end of the document", offset: index) }
            // Every key is followed by a value: counted here, the tape never passes the limit by more than one.
            guard tokens.count < Limit.tokens else { throw .syntax("more than \(Limit.tokens) values and keys", offset: index) }
            switch input[index] {
            case UInt8(ascii: "{"): try parseContainer(input, kind: .object, close: UInt8(ascii: "}"), depth: depth + 1)
            case UInt8(ascii: "["): try parseContainer(input, kind: .array, close: UInt8(ascii: "]"), depth: depth + 1)
            case UInt8(ascii: "\""): try parseString(input)
            case UInt8(ascii: "t"): try parseLiteral(input, "true", kind: .true)
            case UInt8(ascii: "f"): try parseLiteral(input, "false", kind: .false)
            case UInt8(ascii: "n"): try parseLiteral(input, "null", kind: .null)
            case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): try parseNumber(input)
            default: throw .syntax("unexpected character", offset: index)
            }
        }

        private mutating func parseContainer(
            _ input: UnsafeBufferPointer<UInt8>, kind: Token.Kind, close: UInt8, depth: Int
        ) throws(PayloadDecodingError) {
            guard depth <= Limit.depth else { throw .syntax("nesting deeper than \(Limit.depth)", offset: index) }
            let position = tokens.count
            tokens.append(Token(kind: kind, traits: [], start: Int32(index), end: 0, count: 0))
            index += 1
            skipWhitespace(input)
            var count: Int32 = 0
            if index < input.count, input[index] == close {
                index += 1
            } else {
                while true {
                    if kind == .object {
                        guard index < input.count, input[index] == UInt8(ascii: "\"") else {
                            throw .syntax("expected a string key", offset: index)
                        }
                        try parseString(input)
                        skipWhitespace(input)
                        guard index < input.count, input[index] == UInt8(ascii: ":") else {
                            throw .syntax("expected ':' after a key", offset: index)
                        }
                        index += 1
                        skipWhitespace(input)
                    }
                    try parseValue(input, depth: depth)
                    count += 1
                    if kind == .object, count > Limit.members {
                        throw .syntax("object with more than \(Limit.members) keys", offset: index)
                    }
                    skipWhitespace(input)
                    guard index < input.count else { throw .syntax("unexpected end of the document", offset: index) }
                    if input[index] == UInt8(ascii: ",") {
                        index += 1
                        skipWhitespace(input)
                    } else if input[index] == close {
                        index += 1
                        break
                    } else {
                        throw .syntax("expected ',' or the end of the container", offset: index)
                    }
                }
            }
            tokens[position].end = Int32(tokens.count)
            tokens[position].count = count
            if kind == .object, let duplicate = duplicateKey(inObjectAt: position, input) {
                throw .syntax("repeated key", offset: duplicate)
            }
        }

        /// The offset of a key that repeats an earlier one in the object at `position`, if any. Refused because Apple
        /// never repeats one and the libraries disagree on which value wins (Foundation: the first; Python, Java and
        /// Node: the last), so no answer would agree with all of them. Linear in the object's size: small objects
        /// compare pairs, larger ones go through a hash set; an escaped key is unescaped once.
        private func duplicateKey(inObjectAt position: Int, _ input: UnsafeBufferPointer<UInt8>) -> Int? {
            let object = tokens[position]
            // Escaped keys are unescaped once into one buffer; `fromCopy` says which buffer a key's range is in.
            var copies: [UInt8] = []
            var keys: [(range: Range<Int>, fromCopy: Bool, offset: Int)] = []
            keys.reserveCapacity(Int(object.count))
            var member = position + 1
            while member < Int(object.end) {
                let key = tokens[member]
                if key.traits.contains(.escaped) {
                    let start = copies.count
                    copies += JSONTape.unescape(UnsafeBufferPointer(rebasing: input[Int(key.start)..<Int(key.end)])) ?? []
                    keys.append((start..<copies.count, true, Int(key.start)))
                } else {
                    keys.append((Int(key.start)..<Int(key.end), false, Int(key.start)))
                }
                let value = tokens[member + 1]
                member = value.kind == .object || value.kind == .array ? Int(value.end) : member + 2
            }
            return copies.withUnsafeBytes { copied in
                let original = UnsafeRawBufferPointer(input)
                let texts = keys.map { UnsafeRawBufferPointer(rebasing: ($0.fromCopy ? copied : original)[$0.range]) }
                if texts.count <= 8 {
                    for first in texts.indices {
                        for second in (first + 1)..<texts.count where texts[first].elementsEqual(texts[second]) {
                            return keys[second].offset
                        }
                    }
                    return nil
                }
                var seen = Set<KeyBytes>(minimumCapacity: texts.count)
                for (index, text) in texts.enumerated() where !seen.insert(KeyBytes(bytes: text)).inserted {
                    return keys[index].offset
                }
                return nil
            }
        }

        /// Strings are scanned eight bytes at a time while no byte can be a quote, a backslash or a control
        /// character (signed payloads carry kilobytes of base64 in strings); escapes are checked here and decoded later.
        private mutating func parseString(_ input: UnsafeBufferPointer<UInt8>) throws(PayloadDecodingError) {
            index += 1
            let start = index
            var traits: Token.Traits = []
            var seen: UInt64 = 0  // every byte or-ed in: its high bits tell whether the string is all ASCII
            let count = input.count
            while true {
                while index + 8 <= count {
                    let word = UnsafeRawPointer(input.baseAddress! + index).loadUnaligned(as: UInt64.self)
                    guard !Self.mayNeedAttention(word) else { break }
                    seen |= word
                    index += 8
                }
                guard index < count else { throw .syntax("unterminated string", offset: start - 1) }
                let byte = input[index]
                seen |= UInt64(byte)
                if byte == UInt8(ascii: "\"") { break }
                if byte == UInt8(ascii: "\\") {
                    traits.insert(.escaped)
                    try checkEscape(input)
                } else if byte < 0x20 {
                    throw .syntax("control character in a string", offset: index)
                } else {
                    index += 1
                }
            }
            if seen & 0x8080_8080_8080_8080 != 0 {
                // Checked now, as Foundation does, so a document with a broken string is refused whether or not it is read.
                guard String(validating: UnsafeBufferPointer(rebasing: input[start..<index]), as: UTF8.self) != nil else {
                    throw .syntax("string is not valid UTF-8", offset: start)
                }
            }
            guard index - start <= Limit.stringBytes else {
                throw .syntax("string longer than \(Limit.stringBytes) bytes", offset: start - 1)
            }
            tokens.append(Token(kind: .string, traits: traits, start: Int32(start), end: Int32(index), count: 0))
            index += 1
        }

        /// Whether any of the eight bytes may be `"`, `\` or below 0x20 (false positives are fine: the byte loop decides).
        private static func mayNeedAttention(_ word: UInt64) -> Bool {
            let ones: UInt64 = 0x0101_0101_0101_0101
            let highs: UInt64 = 0x8080_8080_8080_8080
            func hasZeroByte(_ value: UInt64) -> Bool { (value &- ones) & ~value & highs != 0 }
            let belowSpace = (word &- ones &* 0x20) & ~word & highs != 0
            return belowSpace || hasZeroByte(word ^ (ones &* 0x22)) || hasZeroByte(word ^ (ones &* 0x5C))
        }

        private mutating func checkEscape(_ input: UnsafeBufferPointer<UInt8>) throws(PayloadDecodingError) {
            let escape = index
            index += 1
            guard index < input.count else { throw .syntax("unterminated escape", offset: escape) }
            switch input[index] {
            case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"), UInt8(ascii: "b"), UInt8(ascii: "f"),
                UInt8(ascii: "n"), UInt8(ascii: "r"), UInt8(ascii: "t"):
                index += 1
            case UInt8(ascii: "u"):
                let unit = try hexUnit(input, at: index + 1, escape: escape)
                index += 5
                if (0xDC00...0xDFFF).contains(unit) { throw .syntax("lone low surrogate", offset: escape) }
                if (0xD800...0xDBFF).contains(unit) {
                    guard index + 1 < input.count, input[index] == UInt8(ascii: "\\"), input[index + 1] == UInt8(ascii: "u"),
                        (0xDC00...0xDFFF).contains(try hexUnit(input, at: index + 2, escape: escape))
                    else { throw .syntax("high surrogate without its low surrogate", offset: escape) }
                    index += 6
                }
            default:
                throw .syntax("invalid escape", offset: escape)
            }
        }

        /// The four hex digits at `offset` as a UTF-16 code unit.
        private func hexUnit(_ input: UnsafeBufferPointer<UInt8>, at offset: Int, escape: Int) throws(PayloadDecodingError) -> UInt32 {
            guard offset + 4 <= input.count else { throw .syntax("\\u must be followed by four hex digits", offset: escape) }
            var unit: UInt32 = 0
            for position in offset..<offset + 4 {
                guard let value = JSONTape.hexValue(input[position]) else {
                    throw .syntax("\\u must be followed by four hex digits", offset: escape)
                }
                unit = unit << 4 | UInt32(value)
            }
            return unit
        }

        private mutating func parseNumber(_ input: UnsafeBufferPointer<UInt8>) throws(PayloadDecodingError) {
            let start = index
            func digits(_ parser: inout Parser) -> Int {
                let first = parser.index
                while parser.index < input.count, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(input[parser.index]) {
                    parser.index += 1
                }
                return parser.index - first
            }
            if input[index] == UInt8(ascii: "-") { index += 1 }
            let integerStart = index
            let integerDigits = digits(&self)
            guard integerDigits > 0 else { throw .syntax("a number needs digits", offset: start) }
            guard integerDigits == 1 || input[integerStart] != UInt8(ascii: "0") else {
                throw .syntax("leading zero in a number", offset: start)
            }
            var plainInteger = true
            if index < input.count, input[index] == UInt8(ascii: ".") {
                index += 1
                plainInteger = false
                guard digits(&self) > 0 else { throw .syntax("a fraction needs digits", offset: start) }
            }
            if index < input.count, input[index] | 0x20 == UInt8(ascii: "e") {
                index += 1
                plainInteger = false
                if index < input.count, input[index] == UInt8(ascii: "+") || input[index] == UInt8(ascii: "-") { index += 1 }
                guard digits(&self) > 0 else { throw .syntax("an exponent needs digits", offset: start) }
            }
            guard index - start <= Limit.numberCharacters else {
                throw .syntax("number longer than \(Limit.numberCharacters) characters", offset: start)
            }
            tokens.append(Token(kind: .number, traits: plainInteger ? [] : .notInteger, start: Int32(start), end: Int32(index), count: 0))
        }

        private mutating func parseLiteral(
            _ input: UnsafeBufferPointer<UInt8>, _ literal: StaticString, kind: Token.Kind
        ) throws(PayloadDecodingError) {
            let length = literal.utf8CodeUnitCount
            guard index + length <= input.count,
                memcmp(input.baseAddress! + index, literal.utf8Start, length) == 0
            else {
                throw .syntax("unexpected character", offset: index)
            }
            tokens.append(Token(kind: kind, traits: [], start: Int32(index), end: Int32(index + length), count: 0))
            index += length
        }

        private mutating func skipWhitespace(_ input: UnsafeBufferPointer<UInt8>) {
            while index < input.count {
                switch input[index] {
                case UInt8(ascii: " "), UInt8(ascii: "\n"), UInt8(ascii: "\r"), UInt8(ascii: "\t"): index += 1
                default: return
                }
            }
        }
    }

    static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
        default: nil
        }
    }
}

/// Key bytes as a hash-set element: hashed and compared by content.
private struct KeyBytes: Hashable {
    let bytes: UnsafeRawBufferPointer

    static func == (lhs: KeyBytes, rhs: KeyBytes) -> Bool { lhs.bytes.elementsEqual(rhs.bytes) }

    func hash(into hasher: inout Hasher) { hasher.combine(bytes: bytes) }
}
