import Foundation

/// Writes a JSON object straight into bytes, keys in the order given: the documents on the hot paths (the status
/// answer, every event's body, a hold's answer, what a spend or a hold stores) are written with it, because
/// Foundation's `JSONEncoder` cost about a fifth of a status read's CPU, and a hold's answer 3 % of `serve`'s CPU
/// under holds and settles. The output is what `JSONEncoder` with `.sortedKeys` and `.iso8601` dates writes when the keys are given
/// sorted (a test compares them byte for byte).
public struct JSONWriter {
    /// What has been written.
    public private(set) var bytes: [UInt8] = []
    /// A value has been written in the current object: the next key needs a comma.
    private var needsComma = false

    public init(capacity: Int = 640) {
        bytes.reserveCapacity(capacity)
    }

    public mutating func beginObject() {
        bytes.append(UInt8(ascii: "{"))
        needsComma = false
    }

    public mutating func endObject() {
        bytes.append(UInt8(ascii: "}"))
        needsComma = true
    }

    public mutating func beginArray() {
        bytes.append(UInt8(ascii: "["))
        needsComma = false
    }

    /// Before each element of an array.
    public mutating func element() {
        if needsComma { bytes.append(UInt8(ascii: ",")) }
        needsComma = true
    }

    public mutating func endArray() {
        bytes.append(UInt8(ascii: "]"))
        needsComma = true
    }

    /// Starts a member; its value follows.
    public mutating func key(_ name: String) {
        if needsComma { bytes.append(UInt8(ascii: ",")) }
        string(name)
        bytes.append(UInt8(ascii: ":"))
        needsComma = true
    }

    public mutating func string(_ value: String?) {
        guard let value else { return null() }
        bytes.append(UInt8(ascii: "\""))
        // Keys and most values need no escape: copied whole, not byte by byte (a status read writes about fifty).
        let copied = value.utf8.withContiguousStorageIfAvailable { utf8 in
            guard !utf8.contains(where: Self.needsEscape) else { return false }
            bytes.append(contentsOf: utf8)
            return true
        }
        if copied != true { escape(value) }
        bytes.append(UInt8(ascii: "\""))
    }

    /// Whether `byte` is written as an escape in a string: a quote, a backslash, a slash (as `JSONEncoder` writes it)
    /// and the control characters.
    private static func needsEscape(_ byte: UInt8) -> Bool {
        byte < 0x20 || byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") || byte == UInt8(ascii: "/")
    }

    private mutating func escape(_ value: String) {
        for byte in value.utf8 {
            switch byte {
            case UInt8(ascii: "\""): bytes += [UInt8(ascii: "\\"), UInt8(ascii: "\"")]
            case UInt8(ascii: "\\"): bytes += [UInt8(ascii: "\\"), UInt8(ascii: "\\")]
            case UInt8(ascii: "/"): bytes += [UInt8(ascii: "\\"), UInt8(ascii: "/")]
            case 0x0A: bytes += [UInt8(ascii: "\\"), UInt8(ascii: "n")]
            case 0x0D: bytes += [UInt8(ascii: "\\"), UInt8(ascii: "r")]
            case 0x09: bytes += [UInt8(ascii: "\\"), UInt8(ascii: "t")]
            case 0x08: bytes += [UInt8(ascii: "\\"), UInt8(ascii: "b")]
            case 0x0C: bytes += [UInt8(ascii: "\\"), UInt8(ascii: "f")]
            case 0x00..<0x20:
                bytes += Array("\\u00".utf8)
                bytes.append(Self.hexDigits[Int(byte >> 4)])
                bytes.append(Self.hexDigits[Int(byte & 0x0F)])
            default: bytes.append(byte)
            }
        }
    }

    public mutating func bool(_ value: Bool) {
        bytes.append(contentsOf: value ? "true".utf8 : "false".utf8)
    }

    public mutating func integer(_ value: Int64?) {
        guard let value else { return null() }
        // Digits written in place, least significant first, then turned round: no `String` a number.
        if value < 0 { bytes.append(UInt8(ascii: "-")) }
        let first = bytes.count
        var rest = value.magnitude
        repeat {
            bytes.append(UInt8(ascii: "0") + UInt8(rest % 10))
            rest /= 10
        } while rest > 0
        bytes.withUnsafeMutableBufferPointer { $0[first...].reverse() }
    }

    /// A number as `JSONEncoder` writes a `Double`: whole values as integers.
    public mutating func number(_ value: Double) {
        if value == value.rounded(), abs(value) < 9e15 { return integer(Int64(value)) }
        bytes += Array(String(value).utf8)
    }

    public mutating func null() {
        bytes.append(contentsOf: "null".utf8)
    }

    /// RFC 3339 at whole seconds in UTC (`2026-11-24T14:26:40Z`), the fraction dropped, as `.iso8601` writes it.
    public mutating func date(_ value: Date?) {
        guard let value else { return null() }
        let seconds = Int64(value.timeIntervalSince1970.rounded(.down))
        let days = seconds >= 0 ? seconds / 86_400 : (seconds - 86_399) / 86_400
        let secondOfDay = seconds - days * 86_400
        let (year, month, day) = Self.civilDate(daysSince1970: days)
        guard (0...9999).contains(year) else { return string(value.formatted(.iso8601)) }
        bytes.append(UInt8(ascii: "\""))
        digits(year, count: 4)
        bytes.append(UInt8(ascii: "-"))
        digits(month, count: 2)
        bytes.append(UInt8(ascii: "-"))
        digits(day, count: 2)
        bytes.append(UInt8(ascii: "T"))
        digits(secondOfDay / 3600, count: 2)
        bytes.append(UInt8(ascii: ":"))
        digits(secondOfDay / 60 % 60, count: 2)
        bytes.append(UInt8(ascii: ":"))
        digits(secondOfDay % 60, count: 2)
        bytes += [UInt8(ascii: "Z"), UInt8(ascii: "\"")]
    }

    /// A member with its value: `"name":value`.
    public mutating func member(_ name: String, _ value: String?) {
        key(name)
        string(value)
    }

    /// A member with an integer value (`null` for `nil`).
    public mutating func member(_ name: String, _ value: Int64?) {
        key(name)
        integer(value)
    }

    public mutating func member(_ name: String, _ value: Bool) {
        key(name)
        bool(value)
    }

    public mutating func member(_ name: String, date value: Date?) {
        key(name)
        date(value)
    }

    /// A value already written as JSON.
    public mutating func raw(_ json: some Sequence<UInt8>) {
        bytes += json
    }

    private mutating func digits(_ value: Int64, count: Int) {
        var divisor: Int64 = 1
        for _ in 1..<count { divisor *= 10 }
        var rest = value
        while divisor > 0 {
            bytes.append(UInt8(ascii: "0") + UInt8(rest / divisor % 10))
            rest %= divisor
            divisor /= 10
        }
    }

    private static let hexDigits = Array("0123456789abcdef".utf8)

    /// Howard Hinnant's days-to-civil: the proleptic Gregorian date `days` after 1970-01-01.
    private static func civilDate(daysSince1970 days: Int64) -> (year: Int64, month: Int64, day: Int64) {
        let shifted = days + 719_468
        let era = (shifted >= 0 ? shifted : shifted - 146_096) / 146_097
        let dayOfEra = shifted - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let monthPrime = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * monthPrime + 2) / 5 + 1
        let month = monthPrime < 10 ? monthPrime + 3 : monthPrime - 9
        return (yearOfEra + era * 400 + (month <= 2 ? 1 : 0), month, day)
    }
}
