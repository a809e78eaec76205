import Foundation

/// Reading tokens as Swift values, on demand. Failures are a small value (no allocation); the containers turn them into
/// `DecodingError`s with the coding path only when one happens.
extension JSONTape {
    enum ReadFailure: Error {
        case typeMismatch(found: Token.Kind)
        case valueNotFound
        case corrupted(String)

        func decodingError(_ type: Any.Type, codingPath: [any CodingKey]) -> DecodingError {
            switch self {
            case .typeMismatch(let found):
                .typeMismatch(type, .init(codingPath: codingPath, debugDescription: "Expected \(type) but found \(found) instead."))
            case .valueNotFound:
                .valueNotFound(type, .init(codingPath: codingPath, debugDescription: "Expected \(type) value but found null instead."))
            case .corrupted(let description):
                .dataCorrupted(.init(codingPath: codingPath, debugDescription: description))
            }
        }
    }

    /// Throws unless the token at `index` is of `kind`.
    func require(_ kind: Token.Kind, at index: Int) throws(ReadFailure) {
        let actual = tokens[index].kind
        guard actual != kind else { return }
        throw actual == .null ? .valueNotFound : .typeMismatch(found: actual)
    }

    func readBool(at index: Int) throws(ReadFailure) -> Bool {
        switch tokens[index].kind {
        case .true: return true
        case .false: return false
        case .null: throw .valueNotFound
        case let other: throw .typeMismatch(found: other)
        }
    }

    /// The string at `index`, unescaped (a lone surrogate escape is refused). Its UTF-8 was checked while parsing.
    func readString(at index: Int) throws(ReadFailure) -> String {
        try require(.string, at: index)
        let token = tokens[index]
        let raw = UnsafeBufferPointer(rebasing: bytes[Int(token.start)..<Int(token.end)])
        guard token.traits.contains(.escaped) else { return String(decoding: raw, as: UTF8.self) }
        guard let unescaped = Self.unescape(raw) else { throw .corrupted("String escapes a lone surrogate.") }
        return String(decoding: unescaped, as: UTF8.self)
    }

    /// The number at `index` as `Integer`, if it is one exactly: integer syntax within range, or a fraction/exponent
    /// form whose value is integral and representable (as Foundation's decoder accepts `1e3` for an `Int`).
    func readInteger<Integer: FixedWidthInteger>(at index: Int, as type: Integer.Type) throws(ReadFailure) -> Integer {
        try require(.number, at: index)
        let token = tokens[index]
        let value: Integer? =
            if token.traits.contains(.notInteger) {
                Integer(exactly: try readDouble(at: index))
            } else {
                Self.integer(in: UnsafeBufferPointer(rebasing: bytes[Int(token.start)..<Int(token.end)]), as: type)
            }
        guard let value else { throw .corrupted("Number does not fit in \(type).") }
        return value
    }

    /// The number at `index` as a `Double`, correctly rounded; out of range is refused.
    func readDouble(at index: Int) throws(ReadFailure) -> Double {
        try require(.number, at: index)
        let token = tokens[index]
        let text = String(decoding: bytes[Int(token.start)..<Int(token.end)], as: UTF8.self)
        guard let value = Double(text), value.isFinite else { throw .corrupted("Number does not fit in Double.") }
        return value
    }

    /// The number at `index` as a `Float` (rounded); beyond `Float`'s range is refused.
    func readFloat(at index: Int) throws(ReadFailure) -> Float {
        let value = try readDouble(at: index)
        guard abs(value) <= Double(Float.greatestFiniteMagnitude) else { throw .corrupted("Number does not fit in Float.") }
        return Float(value)
    }

    /// Whether the object key at `index`, which holds no escape, is exactly `expected` (UTF-8). Escaped keys are
    /// unescaped once by ``KeyedTapeContainer`` and compared there.
    func key(at index: Int, equals expected: UnsafeBufferPointer<UInt8>) -> Bool {
        let token = tokens[index]
        guard Int(token.end - token.start) == expected.count, let expectedBytes = expected.baseAddress else {
            return Int(token.end - token.start) == expected.count
        }
        return memcmp(bytes.baseAddress! + Int(token.start), expectedBytes, expected.count) == 0
    }

    /// Plain integer syntax (`-?digits`, already checked) as `Integer`; `nil` when out of range.
    private static func integer<Integer: FixedWidthInteger>(in text: UnsafeBufferPointer<UInt8>, as type: Integer.Type) -> Integer? {
        let negative = text[0] == UInt8(ascii: "-")
        var magnitude: UInt64 = 0
        for digit in text.dropFirst(negative ? 1 : 0) {
            let (shifted, overflowTimes) = magnitude.multipliedReportingOverflow(by: 10)
            let (sum, overflowPlus) = shifted.addingReportingOverflow(UInt64(digit &- UInt8(ascii: "0")))
            guard !overflowTimes, !overflowPlus else { return nil }
            magnitude = sum
        }
        guard negative, magnitude != 0 else { return Integer(exactly: magnitude) }
        guard Integer.isSigned, magnitude <= UInt64(Int64.max) + 1 else { return nil }
        return magnitude == UInt64(Int64.max) + 1 ? Integer(exactly: Int64.min) : Integer(exactly: -Int64(magnitude))
    }

    /// Resolves the escapes of an already checked string body (surrogates pair up: the parser checked it).
    static func unescape(_ raw: UnsafeBufferPointer<UInt8>) -> [UInt8]? {
        var output: [UInt8] = []
        output.reserveCapacity(raw.count)
        var index = 0
        func hex4(at offset: Int) -> UInt32 {
            (0..<4).reduce(0) { $0 << 4 | UInt32(hexValue(raw[offset + $1])!) }
        }
        while index < raw.count {
            let byte = raw[index]
            guard byte == UInt8(ascii: "\\") else {
                output.append(byte)
                index += 1
                continue
            }
            let escape = raw[index + 1]
            index += 2
            switch escape {
            case UInt8(ascii: "b"): output.append(0x08)
            case UInt8(ascii: "f"): output.append(0x0C)
            case UInt8(ascii: "n"): output.append(0x0A)
            case UInt8(ascii: "r"): output.append(0x0D)
            case UInt8(ascii: "t"): output.append(0x09)
            case UInt8(ascii: "u"):
                var scalar = hex4(at: index)
                index += 4
                if (0xD800...0xDBFF).contains(scalar) {
                    // A high surrogate must be followed by an escaped low surrogate.
                    guard index + 6 <= raw.count, raw[index] == UInt8(ascii: "\\"), raw[index + 1] == UInt8(ascii: "u")
                    else { return nil }
                    let low = hex4(at: index + 2)
                    guard (0xDC00...0xDFFF).contains(low) else { return nil }
                    scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
                    index += 6
                }
                guard let unicode = Unicode.Scalar(scalar) else { return nil }
                output.append(contentsOf: UTF8.encode(unicode)!)
            default: output.append(escape)  // `"`, `\` and `/` stand for themselves.
            }
        }
        return output
    }
}
